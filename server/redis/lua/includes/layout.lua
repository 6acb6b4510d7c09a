--[[
  The names every unread script needs before anything else (`--- @include "layout"`, first): the fields of a
  conversation's record (includes/unread.lua says what they hold) and what a conversation id is. Nothing here makes
  a closure but `numeric`, so apply.lua's straight path can use it all. The layout's keys carry its number
  (`{u:<id>}:v2:…`, server/redis/keys.ts), so scripts of another layout never read its state, nor it theirs.
]]
-- A record's fields, in stored order: the common ones first, so most records are two or three numbers. Folded into
-- numbers by scripts.ts (a constant a function reads would be one more upvalue of a closure made on every call).
--- @constants
local SEEN, READ, UNREAD, MENTIONS, MARKED, AGED = 1, 2, 3, 4, 5, 6
--- @constants
local MUTE_V, MUTED, MARK_V, MARK_AT, CLEARED, FIELDS = 7, 8, 9, 10, 11, 11

-- A conversation id as the database makes them, at most ten digits (mentions and expiry need one, to name a message
-- '%010d:%010d'; the lab's need not be).
local function numeric(conv)
  return #conv <= 10 and (conv == '0' or string.find(conv, '^[1-9]%d*$') ~= nil)
end
