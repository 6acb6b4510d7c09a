--[[
  Forgetting a conversation the user is no longer in (`--- @include "gone"`, after "unread" and "ttl"): every
  value and register of it goes, and a "gone" mark (KEYS[5]) makes apply.lua ignore late events for it.
  Written by remove.lua when the user leaves or the conversation is deleted, and by rebuild.lua for the
  departures the database lists, so the mark survives Redis losing the state in between.
]]

-- Returns the view of conv before it went ({ unread, mentions, muted, marked, effective }).
local function drop_conversation(conv)
  local old = view(conv)
  drop_expiry(conv)
  if numeric(conv) then
    rcall('ZREMRANGEBYLEX', KEYS[8], '[' .. mention_member(conv, 0), '[' .. mention_member(conv, 9999999999))
  end
  rcall('HDEL', KEYS[2], conv)
  rcall('HDEL', KEYS[3], conv)
  rcall('HDEL', KEYS[4], conv)
  rcall('HDEL', KEYS[9], conv)
  rcall('HDEL', KEYS[10], conv)
  rcall('HSET', KEYS[5], conv, 1)
  return old
end
