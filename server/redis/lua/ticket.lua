--[[
  The ticket a rebuild takes before it reads the database. KEYS[1] the user's meta; ARGV[1] a new unique string.
  Returns the meta's `ticket`, first set to '<term>/ARGV[1]' if it holds none, or one stamped with another
  replication term (includes/fence.lua; '-' on a single Redis). Concurrent rebuilds share one.
  rebuild.lua writes state from scratch only for the ticket the meta still holds, under the term it names. Whatever
  makes Redis lose the user's keys (FLUSHALL, a restart without persistence) takes the ticket with them, and a
  failover changes the term (a promoted replica may hold the ticket without the state written under it), so a
  database read made before such a loss cannot create state that misses an event applied, and then lost, after the
  read: that rebuild is told to take a ticket and read again (docs/consistency.md, "Redis loses its data"). A
  ticket alone is no state (every script looks for the meta's epoch); one left by a rebuild that died is reused.
]]
local rcall = redis.call
--- @include "fence"

local term = fencing().node_term()
local held = rcall('HGET', KEYS[1], 'ticket')
if held and string.sub(held, 1, #term + 1) == term .. '/' then return held end
local ticket = term .. '/' .. ARGV[1]
rcall('HSET', KEYS[1], 'ticket', ticket)
return ticket
