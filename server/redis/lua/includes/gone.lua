--[[
  Forgetting a conversation the user is no longer in (`--- @include "gone"`, after "unread" and "ttl"): its record
  goes with every register and value in it, its mentions, its own messages and its expiry timestamps, and a "gone"
  mark (KEYS[3]) makes apply.lua ignore late events for it. Written by remove.lua when the user leaves or the
  conversation is deleted, and by rebuild.lua for the departures the database lists, so the mark survives Redis
  losing the state in between.
]]

-- Returns the view of conv before it went ({ unread, mentions, muted, marked, effective }).
local function drop_conversation(conv)
  local r = parse_record(rcall('HGET', KEYS[2], conv))
  if numeric(conv) then
    -- Expiry state from when expiry was on: the registers bound the timestamps it may hold.
    expiry().forget_times(conv, math.max(r[READ], r[AGED]), r[SEEN])
    -- Its mentions and own messages: every member from '<conv>:0…' to '<conv>:o9…'.
    local X = extras()
    rcall('ZREMRANGEBYLEX', KEYS[5], '[' .. X.mention_member(conv, 0), '[' .. X.own_member(conv, 9999999999))
  end
  rcall('HDEL', KEYS[2], conv)
  rcall('HSET', KEYS[3], conv, 1)
  return view(r)
end
