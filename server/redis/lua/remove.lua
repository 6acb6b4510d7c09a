--[[
  Remove one conversation from one user's unread state (the user left it, or it was deleted).
  KEYS[1] {u:<id>}:meta   KEYS[2] {u:<id>}:unread   KEYS[3] {u:<id>}:seen   KEYS[4] {u:<id>}:read
  KEYS[5] {u:<id>}:gone   KEYS[6] {u:<id>}:times  KEYS[7] {u:<id>}:aged
  ARGV[1] conversation id
  Its unread leaves the total in the same step, and a "gone" mark makes apply.lua ignore late events for it; its
  expiry state (message timestamps, aged mark) goes too.
  Returns { 0, total, version, epoch, changed } like apply.lua (changed when the total moved), or { -1 }
  when the user's state is missing (nothing to remove: a rebuild reads memberships, which no longer list it).
  Idempotent: removing twice changes nothing the second time.
]]
local rcall = redis.call
--- @include "unread"
--- @include "ttl"

local conv = ARGV[1]
if conv == nil or conv == '' then
  return redis.error_reply('ERR tally remove: expected a conversation id')
end
local meta = rcall('HMGET', KEYS[1], 'total', 'version', 'epoch')
if not meta[3] then
  return { -1 }
end
local total = tonumber(meta[1]) or 0
local version = tonumber(meta[2]) or 0
local unread_old = tonumber(rcall('HGET', KEYS[2], conv)) or 0

drop_expiry(conv)
rcall('HDEL', KEYS[2], conv)
rcall('HDEL', KEYS[3], conv)
rcall('HDEL', KEYS[4], conv)
rcall('HSET', KEYS[5], conv, 1)
if unread_old == 0 then
  return { 0, total, version, meta[3], 0 }
end
total = total - unread_old
version = version + 1
rcall('HSET', KEYS[1], 'total', total, 'version', version)
return { 0, total, version, meta[3], 1 }
