--[[
  Read one user's whole unread state in one atomic step, so a snapshot is never torn.
  KEYS[1] {u:<id>}:meta   KEYS[2] {u:<id>}:unread
  Returns { epoch, version, total, conv1, unread1, conv2, unread2, ... } (only conversations with unread > 0),
  or { -1 } when the user's state is missing and must be rebuilt from the database.
]]
local rcall = redis.call

local meta = rcall('HMGET', KEYS[1], 'epoch', 'version', 'total')
if not meta[1] then
  return { -1 }
end
local out = { meta[1], tonumber(meta[2]) or 0, tonumber(meta[3]) or 0 }
local pairs_ = rcall('HGETALL', KEYS[2])
for i = 1, #pairs_ do
  out[#out + 1] = pairs_[i]
end
return out
