--[[
  A stored message reaching its members: apply.lua for each of them (its body is pasted above this file as
  apply_one, KEYS and ARGV its parameters), then one PUBLISH of the delivery with every member's reply, so the
  sending instance makes one Redis round trip for the counters and the push to other instances, not two
  (docs/benchmarks.md). Only for events without named parts (no mention, no registers), on one redis-server.
  KEYS       five per member, as apply.lua takes them, in the order of the members
  ARGV[1]    the channel
  ARGV[2]    the payload's head (the sender's JSON and a newline); the published payload is the head, then the
             replies as one JSON array
  ARGV[3..]  six per member: conversation id, seen seq, read seq, createdAt ms, ttl ms, "now" ms or ''
  Returns apply.lua's reply for each member. When a member's state is missing ({ -1 }) nothing is published: the
  caller rebuilds it and delivers on its own. An error reply of apply.lua is returned as it is.
]]
local replies, missing = {}, false
for m = 0, #KEYS / 5 - 1 do
  local k, a = m * 5, 2 + m * 6
  local reply = apply_one({ KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5] },
    { ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6] })
  if reply.err then return reply end
  if reply[1] == -1 then missing = true end
  replies[m + 1] = reply
end
if not missing then redis.call('PUBLISH', ARGV[1], ARGV[2] .. cjson.encode(replies)) end
return replies
