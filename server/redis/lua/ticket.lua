--[[
  The ticket a rebuild takes before it reads the database. KEYS[1] the user's meta; ARGV[1] a new unique string.
  Returns the meta's `ticket`, set to ARGV[1] first if it holds none (concurrent rebuilds share one).
  rebuild.lua writes state from scratch only for the ticket the meta still holds. Whatever makes Redis lose the
  user's keys (FLUSHALL, a restart without persistence, a failover to a replica that lacks them) takes the ticket
  with them, so a database read made before that loss cannot create state that misses an event applied, and lost,
  after the read: that rebuild is told to read again (docs/consistency.md, "Redis loses its data").
]]
local held = redis.call('HGET', KEYS[1], 'ticket')
if held then return held end
redis.call('HSET', KEYS[1], 'ticket', ARGV[1])
return ARGV[1]
