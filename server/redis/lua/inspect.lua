--[[
  Read everything Tally keeps for one user in one atomic step (reconciliation compares it with the database).
  KEYS[1..10] the unread scripts' keys: meta, unread, seen, read, gone, times, aged, ment, mcount, state
  ARGV[1] unread expiry in ms, 0 = off (optional)
  ARGV[2] "now" in ms, the instant expiry is judged at (optional: tests pass it; without it, the server's TIME)
  With expiry on, messages created before now - ARGV[1] first stop counting, as snapshot.lua does (a new epoch
  when that changed a value), unless a stored sum already disagrees with its parts (left for the caller to see).
  Returns { meta, unread, seen, read, gone, aged, now, expired, mcount, state }: HGETALL lists, the "now" it
  used in ms (the database's truth is computed for that instant) and 1 when expiry started a new epoch;
  { -1 } when missing (or fenced: written under another replication term, includes/fence.lua).
]]
local rcall = redis.call
--- @include "unread"
--- @include "ttl"
--- @include "fence"

local ttl = tonumber(ARGV[1] or '0')
local now_in = ARGV[2] and tonumber(ARGV[2])
if ttl == nil or ttl < 0 or (ARGV[2] and (now_in == nil or now_in < 0)) then
  return redis.error_reply('ERR tally inspect: expected ttl ms >= 0, now ms >= 0')
end
local meta = rcall('HMGET', KEYS[1], 'epoch', 'total', 'mentions', 'term')
if not meta[1] or fenced(meta[4]) then
  return { -1 }
end

local now = expiry_now(now_in)
local expired = 0
if ttl > 0 then
  local sum, sum_mentions = stored_sums()
  local total = tonumber(meta[2]) or 0
  local total_mentions = tonumber(meta[3]) or 0
  if sum == total and sum_mentions == total_mentions then
    local changed, delta, dm = expire_before(now - ttl)
    if #changed > 0 then
      expired = 1
      rcall('HSET', KEYS[1], 'total', total + delta, 'mentions', total_mentions + dm, 'version', 1,
        'epoch', next_epoch(meta[1]))
    end
  end
end

return {
  rcall('HGETALL', KEYS[1]),
  rcall('HGETALL', KEYS[2]),
  rcall('HGETALL', KEYS[3]),
  rcall('HGETALL', KEYS[4]),
  rcall('HGETALL', KEYS[5]),
  rcall('HGETALL', KEYS[7]),
  now,
  expired,
  rcall('HGETALL', KEYS[9]),
  rcall('HGETALL', KEYS[10]),
}
