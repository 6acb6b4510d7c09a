--[[
  Extend a lock's lease only if the caller still owns it (the watchdog's renewal).
  KEYS[1] the lock key
  ARGV[1] the owner's token   ARGV[2] the new lease in milliseconds
  Returns 1 when the lease was extended, 0 when the lock had expired or another owner holds it now.
]]
local rcall = redis.call

local ttl = tonumber(ARGV[2])
if ttl == nil or ttl <= 0 then
  return redis.error_reply('ERR lab renew: expected a lease in milliseconds > 0')
end
if rcall('GET', KEYS[1]) == ARGV[1] then
  return rcall('PEXPIRE', KEYS[1], ttl)
end
return 0
