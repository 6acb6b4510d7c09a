--[[
  Read one user's whole unread state in one atomic step, so a snapshot is never torn.
  KEYS[1..5] the unread scripts' keys: meta, convs, gone, times, ment (includes/unread.lua)
  ARGV[1] unread expiry in ms, 0 = off (optional)
  ARGV[2] "now" in ms, the instant expiry is judged at (optional: tests pass it; without it, the server's TIME)
  With expiry off it only reads. With it on, messages created before now - ARGV[1] first stop counting (expiry
  is evaluated at read time); if that changed any value, the sums are adjusted and a new epoch starts at
  version 1, so clients holding older state resync.
  Returns { epoch, version, total, totalMentions, expired, conv1, unread1, mentions1, muted1, markVersion1, ... }
  for every conversation with anything to show (unread or mentions > 0, muted or marked unread; markVersion is
  the mark's version while it is marked, else 0) where expired is 1 when a new epoch was started; { -1 } when the
  user's state is missing (or fenced, includes/fence.lua) and must be rebuilt from the database; { -2 } when a stored sum differs from its parts and must be repaired (rebuild.lua) first. It reads
  every conversation's record once (one HGETALL) and both checks the sums and lists from them: the full check costs
  no more than the listing.
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
  return redis.error_reply('ERR tally snapshot: expected ttl ms >= 0, now ms >= 0')
end

local meta = rcall('HMGET', KEYS[1], 'epoch', 'version', 'total', 'mentions', 'term')
if not meta[1] or fenced(meta[5]) then
  return { -1 }
end
local epoch = meta[1]
local version = tonumber(meta[2]) or 0
local total = tonumber(meta[3]) or 0
local total_mentions = tonumber(meta[4]) or 0
-- The sums are checked against the very values the snapshot hands out (apply.lua never sums: see its header).
local views = stored_views()
local sum, sum_mentions = stored_sums(views)
if sum ~= total or sum_mentions ~= total_mentions then
  return { -2 }
end

local expired = 0
if ttl > 0 then
  local E = expiry()
  local changed, delta, dm = E.expire_before(E.now(now_in) - ttl)
  if #changed > 0 then
    expired = 1
    epoch = E.next_epoch(epoch)
    version = 1
    total = total + delta
    total_mentions = total_mentions + dm
    rcall('HSET', KEYS[1], 'total', total, 'version', version, 'epoch', epoch, 'mentions', total_mentions)
    views = stored_views()
  end
end

local out = { epoch, version, total, total_mentions, expired }
for i = 1, views.n do
  if views.unread[i] > 0 or views.mentions[i] > 0 or views.muted[i] == 1 or views.marked[i] == 1 then
    local mark = 0
    if views.marked[i] == 1 then mark = views.mark[i] end
    out[#out + 1] = views.conv[i]
    out[#out + 1] = views.unread[i]
    out[#out + 1] = views.mentions[i]
    out[#out + 1] = views.muted[i]
    out[#out + 1] = mark
  end
end
return out
