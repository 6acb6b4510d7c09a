--[[
  Create one user's unread state from the database's truth, or merge that truth into existing state.
  KEYS[1] {u:<id>}:meta   KEYS[2] {u:<id>}:unread   KEYS[3] {u:<id>}:seen   KEYS[4] {u:<id>}:read
  ARGV[1] a new epoch (unique string)
  ARGV[2..] triples: conversation id, conversation lastSeq, the user's lastReadSeq
  Missing state: written from the triples, total = sum of unreads, version 1, epoch ARGV[1].
  Existing state: each triple merges into the max-registers as apply.lua would (a rebuild that read the
  database before a later event was applied must not undo it); if any unread changed, or the stored total
  differs from the sum of unreads, the total is recomputed and the epoch is replaced, so every client
  resyncs instead of patching one conversation. Otherwise nothing is written.
  Returns { epoch, version, total, status } with status 'created', 'merged' or 'unchanged'.
]]
local rcall = redis.call

local epoch_new = ARGV[1]
if epoch_new == nil or epoch_new == '' or (#ARGV - 1) % 3 ~= 0 then
  return redis.error_reply('ERR tally rebuild: expected an epoch and (conversation, lastSeq, lastReadSeq) triples')
end
for i = 2, #ARGV, 3 do
  local s, r = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if ARGV[i] == '' or s == nil or r == nil or s < 0 or r < 0 then
    return redis.error_reply('ERR tally rebuild: bad triple at argument ' .. i)
  end
end

local exists = rcall('HEXISTS', KEYS[1], 'epoch') == 1
if not exists then
  rcall('DEL', KEYS[2], KEYS[3], KEYS[4])
end

local changed = false
for i = 2, #ARGV, 3 do
  local conv = ARGV[i]
  local seen_old = tonumber(rcall('HGET', KEYS[3], conv)) or 0
  local read_old = tonumber(rcall('HGET', KEYS[4], conv)) or 0
  local unread_old = tonumber(rcall('HGET', KEYS[2], conv)) or 0
  local seen = math.max(seen_old, tonumber(ARGV[i + 1]))
  local read = math.max(read_old, tonumber(ARGV[i + 2]))
  local unread = math.max(0, seen - read)
  if seen ~= seen_old then rcall('HSET', KEYS[3], conv, seen) end
  if read ~= read_old then rcall('HSET', KEYS[4], conv, read) end
  if unread ~= unread_old then
    changed = true
    if unread == 0 then rcall('HDEL', KEYS[2], conv) else rcall('HSET', KEYS[2], conv, unread) end
  end
end

local sum = 0
local unreads = rcall('HVALS', KEYS[2])
for i = 1, #unreads do
  sum = sum + (tonumber(unreads[i]) or 0)
end

if not exists then
  rcall('HSET', KEYS[1], 'total', sum, 'version', 1, 'epoch', epoch_new)
  return { epoch_new, 1, sum, 'created' }
end

local meta = rcall('HMGET', KEYS[1], 'epoch', 'version', 'total')
if not changed and tonumber(meta[3]) == sum then
  return { meta[1], tonumber(meta[2]) or 0, sum, 'unchanged' }
end
rcall('HSET', KEYS[1], 'total', sum, 'version', 1, 'epoch', epoch_new)
return { epoch_new, 1, sum, 'merged' }
