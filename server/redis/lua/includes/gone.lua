--[[
  Forgetting a conversation the user is no longer in (`--- @include "gone"`, after "unread" and "ttl"): its record
  goes with every register and value in it, its mentions, its own messages and its expiry timestamps, and a "gone"
  mark (KEYS[3]) makes apply.lua ignore late events for it. Written by remove.lua when the user leaves or the
  conversation is deleted, and by rebuild.lua for the departures the database lists, so the mark survives Redis
  losing the state in between.
  A mark's value is when it was set (ms; 1 in marks of the earlier layout, which carry no time). A late event comes
  within DEPARTURE_MEMORY_MS (unread.service.ts), so older marks are pruned (mark_gone): a user whose
  conversations are created and deleted over and over (each deletion leaves a mark) holds a day's worth, not all.
]]

-- Marks conv gone at `at` (ms), and every so often prunes marks older than `memory` ms before it (none without
-- `memory`): when the hash has grown to a multiple of 64 fields from 256 on, so a prune's walk of the hash is paid
-- for by the 64 marks before it. A mark of the earlier layout (1) is stamped `at` instead: it goes a day later.
local function mark_gone(conv, at, memory)
  rcall('HSET', KEYS[3], conv, at)
  if not memory then return end
  local size = rcall('HLEN', KEYS[3])
  if size < 256 or size % 64 ~= 0 then return end
  local flat = rcall('HGETALL', KEYS[3])
  local doomed = {}
  for i = 1, #flat, 2 do
    local set_at = tonumber(flat[i + 1]) or 1
    if set_at == 1 then
      rcall('HSET', KEYS[3], flat[i], at)
    elseif set_at < at - memory then
      doomed[#doomed + 1] = flat[i]
    end
  end
  for i = 1, #doomed, 1000 do
    rcall('HDEL', KEYS[3], unpack(doomed, i, math.min(i + 999, #doomed)))
  end
end

-- Forgets conv and marks it gone at `at` (ms; mark_gone). Returns the view of conv before it went ({ unread,
-- mentions, muted, marked, effective }).
local function drop_conversation(conv, at, memory)
  local r = parse_record(rcall('HGET', KEYS[2], conv))
  if numeric(conv) then
    -- Expiry state from when expiry was on: the registers bound the timestamps it may hold.
    expiry().forget_times(conv, math.max(r[READ], r[AGED]), r[SEEN])
    -- Its mentions and own messages: every member from '<conv>:0…' to '<conv>:o9…'.
    local X = extras()
    rcall('ZREMRANGEBYLEX', KEYS[5], '[' .. X.mention_member(conv, 0), '[' .. X.own_member(conv, 9999999999))
  end
  rcall('HDEL', KEYS[2], conv)
  mark_gone(conv, at, memory)
  return view(r)
end
