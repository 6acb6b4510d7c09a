--[[
  Remove one conversation from one user's unread state (the user left it, or it was deleted).
  KEYS[1..5] the unread scripts' keys: meta, convs, gone, times, ment (includes/unread.lua)
  ARGV[1] conversation id
  ARGV[2] optionally the instant (ms) the "gone" mark is stamped with ('' or none: the server's TIME; tests pass it)
  ARGV[3] optionally how long (ms) a mark must be kept (DEPARTURE_MEMORY_MS): older ones are pruned now and then
  (includes/gone.lua, mark_gone); none: nothing is pruned
  Its values leave the sums in the same step, and a "gone" mark makes apply.lua ignore late events for it; its
  expiry state (message timestamps, aged mark), mentions, mute and mark go too.
  Returns { 0, total, version, epoch, changed, 0, totalMentions, 0, 0 } like apply.lua (changed when a snapshot
  listed the conversation: unread, mentions, muted or marked), or { -1 } when the user's state is missing (or
  fenced, includes/fence.lua): nothing to remove but the "gone" mark, which it still sets (rebuild.lua never
  removes one). Idempotent: removing twice changes nothing the second time.
]]
local rcall = redis.call
--- @include "layout"
--- @include "unread"
--- @include "ttl"
--- @include "gone"
--- @include "fence"

local conv = ARGV[1]
local at_in, memory = ARGV[2], ARGV[3]
if conv == nil or conv == '' then
  return redis.error_reply('ERR tally remove: expected a conversation id')
end
if at_in == '' then at_in = nil end
if at_in ~= nil then
  at_in = tonumber(at_in)
  if at_in == nil or at_in < 2 then return redis.error_reply('ERR tally remove: bad instant') end
end
if memory ~= nil then
  memory = tonumber(memory)
  if memory == nil or memory < 0 then return redis.error_reply('ERR tally remove: bad memory') end
end
local at = expiry().now(at_in)
local meta = rcall('HMGET', KEYS[1], 'total', 'version', 'epoch', 'mentions', 'term')
if not meta[3] or fenced(meta[5]) then
  -- Nothing to remove, but the mark outlives the missing state: a rebuild whose database read came just
  -- before the departure committed keeps it, and so leaves the conversation out.
  mark_gone(conv, at, memory)
  return { -1 }
end
local total = tonumber(meta[1]) or 0
local version = tonumber(meta[2]) or 0
local total_mentions = tonumber(meta[4]) or 0
local old = drop_conversation(conv, at, memory)
-- Not in a snapshot (nothing unread, no mention, neither muted nor marked): nothing anyone sees moved. Anything
-- else moves the version, even when the sums stay (a muted conversation's unread): a snapshot's list of counts
-- changes only with the version or the epoch, which a sync that reads the database beside Redis relies on
-- (server/unread/snapshot.service.ts).
if old[1] == 0 and old[2] == 0 and old[3] == 0 and old[4] == 0 then
  return { 0, total, version, meta[3], 0, 0, total_mentions, 0, 0 }
end
total = total - old[5]
total_mentions = total_mentions - old[2]
version = version + 1
rcall('HSET', KEYS[1], 'total', total, 'version', version, 'mentions', total_mentions)
return { 0, total, version, meta[3], 1, 0, total_mentions, 0, 0 }
