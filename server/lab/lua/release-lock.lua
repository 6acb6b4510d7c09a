--[[
  Release a lock only if the caller still owns it (compare-and-delete).
  KEYS[1] the lock key
  ARGV[1] the owner's token (random per acquisition)
  Returns 1 when the lock was released, 0 when it had expired or another owner holds it now.
]]
local rcall = redis.call

if rcall('GET', KEYS[1]) == ARGV[1] then
  return rcall('DEL', KEYS[1])
end
return 0
