--[[
  Read everything Tally keeps for one user in one atomic step (reconciliation compares it with the database).
  KEYS[1..5] the unread scripts' keys: meta, convs, gone, times, ment (includes/unread.lua)
  ARGV[1] unread expiry in ms, 0 = off (optional)
  ARGV[2] "now" in ms, the instant expiry is judged at (optional: tests pass it; without it, the server's TIME)
  With expiry on, messages created before now - ARGV[1] first stop counting, as snapshot.lua does (a new epoch
  when that changed a value), unless a stored sum already disagrees with its parts (left for the caller to see).
  Returns { meta, unread, seen, read, gone, aged, now, expired, mcount, state }: flat (field, value) lists, meta's
  and gone's as stored, the others one per record field (conversation -> value, zeros left out; state: the mute
  and mark registers as 'muteVersion:muted:markVersion:markAt:cleared:marked', for conversations with any of them),
  the "now" it used in ms (the database's truth is computed for that instant) and 1 when expiry started a new
  epoch; { -1 } when missing (or fenced: written under another replication term, includes/fence.lua).
]]
local rcall = redis.call
--- @include "layout"
--- @include "unread"
--- @include "sums"
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

local E = expiry()
local now = E.now(now_in)
local expired = 0
if ttl > 0 then
  local sum, sum_mentions = stored_sums()
  local total = tonumber(meta[2]) or 0
  local total_mentions = tonumber(meta[3]) or 0
  if sum == total and sum_mentions == total_mentions then
    local changed, delta, dm = E.expire_before(now - ttl)
    if #changed > 0 then
      expired = 1
      rcall('HSET', KEYS[1], 'total', total + delta, 'mentions', total_mentions + dm, 'version', 1,
        'epoch', E.next_epoch(meta[1]))
    end
  end
end

local lists = { unread = {}, seen = {}, read = {}, aged = {}, mcount = {}, state = {} }
local function list(name, conv, value)
  if value ~= 0 then
    local l = lists[name]
    l[#l + 1] = conv
    l[#l + 1] = value
  end
end
local values = stored_values()
for _, conv in ipairs(values.order) do
  local r = values.records[conv]
  list('unread', conv, r[UNREAD])
  list('seen', conv, r[SEEN])
  list('read', conv, r[READ])
  list('aged', conv, r[AGED])
  list('mcount', conv, r[MENTIONS])
  if r[MUTE_V] ~= 0 or r[MARK_V] ~= 0 or r[CLEARED] ~= 0 or r[MARKED] ~= 0 then
    list('state', conv, table.concat({ r[MUTE_V], r[MUTED], r[MARK_V], r[MARK_AT], r[CLEARED], r[MARKED] }, ':'))
  end
end

return {
  rcall('HGETALL', KEYS[1]),
  lists.unread,
  lists.seen,
  lists.read,
  rcall('HGETALL', KEYS[3]),
  lists.aged,
  now,
  expired,
  lists.mcount,
  lists.state,
}
