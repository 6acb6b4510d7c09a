--[[
  A stored message reaching its members: apply.lua for each of them (its body is pasted above this file as
  apply_one, KEYS and ARGV its parameters), then one PUBLISH of the delivery with every member's reply, so the
  sending instance makes one Redis round trip for the counters and the push to other instances, not two
  (docs/benchmarks.md). On one redis-server; for message events only (no mute, mark or clear parts).
  KEYS       five per member, as apply.lua takes them, in the order of the members
  ARGV[1]    the channel
  ARGV[2]    the payload's head (the sender's JSON and a newline); the published payload is the head, then the
             replies as one JSON array
  ARGV[3..]  seven per member: conversation id, seen seq, read seq, createdAt ms, ttl ms, "now" ms or '', and
             'mention' when the message mentions the member, 'own' for its sender, else ''
  Returns { published, reply, reply, ... }: 1 when the delivery was published, then apply.lua's reply for each
  member. Nothing is published when a member's state is missing ({ -1 }: the caller rebuilds it and delivers on
  its own) or when there is no member; a PUBLISH that fails (an ACL without the channel) answers published 0 after
  every member was applied. An error reply of apply.lua is returned as it is.
]]
local replies, missing = {}, false
local members = #KEYS / 5
for m = 0, members - 1 do
  local k, a = m * 5, 2 + m * 7
  local argv = { ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6] }
  if ARGV[a + 7] == 'mention' or ARGV[a + 7] == 'own' then argv[7] = ARGV[a + 7] end
  local reply = apply_one({ KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5] }, argv)
  if reply.err then return reply end
  if reply[1] == -1 then missing = true end
  replies[m + 1] = reply
end
local out = { 0 }
if members > 0 and not missing then
  local sent = redis.pcall('PUBLISH', ARGV[1], ARGV[2] .. cjson.encode(replies))
  if type(sent) == 'number' then out[1] = 1 end
end
for m = 1, members do out[m + 1] = replies[m] end
return out
