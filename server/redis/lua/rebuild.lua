--[[
  Create one user's unread state from the database's truth, merge that truth into existing state, or replace it.
  KEYS[1] {u:<id>}:meta   KEYS[2] {u:<id>}:unread   KEYS[3] {u:<id>}:seen   KEYS[4] {u:<id>}:read
  KEYS[5] {u:<id>}:gone   KEYS[6] {u:<id>}:times    KEYS[7] {u:<id>}:aged
  ARGV[1] a new epoch (unique string)
  ARGV[2] 'merge' or 'replace'
  ARGV[3..] triples: conversation id, conversation lastSeq, the user's lastReadSeq (every current membership)
  then, with unread expiry on only: 'ttl', the expiry in ms, optionally 'now' and the instant (ms) expiry is
  judged at (tests pass it; without it, the server's TIME), and triples conversation id, seq, createdAt ms of
  the user's unread messages (seq above lastReadSeq; of those already expired, the highest seq per conversation
  is enough). They are tracked as apply.lua tracks them, then expired at "now".
  Missing state, or 'replace': written from the triples alone, total = sum of unreads, version 1, epoch ARGV[1].
  'merge' into existing state: each triple merges into the max-registers as apply.lua would (a rebuild that read
  the database before a later event was applied must not undo it) and clears a stale "gone" mark; if any unread
  changed, or the stored total differs from the sum of unreads, the total is recomputed and the epoch replaced,
  so every client resyncs instead of patching one conversation. Otherwise nothing is written.
  'replace' is for reconciliation only, when Redis holds more than the database (a register above the truth,
  a conversation the user is no longer in, an expired mark the database does not explain), which merging cannot undo.
  Returns { epoch, version, total, status } with status 'created', 'merged', 'replaced' or 'unchanged'.
]]
local rcall = redis.call
--- @include "unread"
--- @include "ttl"

local epoch_new = ARGV[1]
local mode = ARGV[2]
-- ARGV[3..last]: membership triples; ARGV[first..]: message triples (none when there is no 'ttl' section).
local last = #ARGV
local first = #ARGV + 1
local ttl = 0
local now_in = nil
local now_ok = true
for i = 3, #ARGV, 3 do
  if ARGV[i] == 'ttl' then
    last = i - 1
    ttl = tonumber(ARGV[i + 1])
    first = i + 2
    if ARGV[first] == 'now' then
      now_in = tonumber(ARGV[first + 1])
      now_ok = now_in ~= nil and now_in >= 0
      first = first + 2
    end
    break
  end
end
if epoch_new == nil or epoch_new == '' or (mode ~= 'merge' and mode ~= 'replace') or (last - 2) % 3 ~= 0
  or ttl == nil or ttl < 0 or not now_ok or (#ARGV - first + 1) % 3 ~= 0 then
  return redis.error_reply('ERR tally rebuild: expected an epoch, merge|replace, (conversation, lastSeq, lastReadSeq) triples and optionally ttl, ms, [now, ms,] (conversation, seq, createdAt) triples')
end
for i = 3, last, 3 do
  local s, r = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if ARGV[i] == '' or s == nil or r == nil or s < 0 or r < 0 or (ttl > 0 and tostring(tonumber(ARGV[i])) ~= ARGV[i]) then
    return redis.error_reply('ERR tally rebuild: bad triple at argument ' .. i)
  end
end
for i = first, #ARGV, 3 do
  local s, t = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if tostring(tonumber(ARGV[i])) ~= ARGV[i] or s == nil or t == nil or s < 1 or t < 0 then
    return redis.error_reply('ERR tally rebuild: bad message triple at argument ' .. i)
  end
end

local exists = rcall('HEXISTS', KEYS[1], 'epoch') == 1
local fresh = not exists or mode == 'replace'
if fresh then
  rcall('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
end
local before = rcall('HGETALL', KEYS[2])

for i = 3, last, 3 do
  local conv = ARGV[i]
  rcall('HDEL', KEYS[5], conv)
  local seen_old = tonumber(rcall('HGET', KEYS[3], conv)) or 0
  local read_old = tonumber(rcall('HGET', KEYS[4], conv)) or 0
  local seen = math.max(seen_old, tonumber(ARGV[i + 1]))
  local read = math.max(read_old, tonumber(ARGV[i + 2]))
  if seen ~= seen_old then rcall('HSET', KEYS[3], conv, seen) end
  if read ~= read_old then
    rcall('HSET', KEYS[4], conv, read)
    if ttl > 0 then
      local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
      forget_times(conv, math.max(read_old, aged), math.min(read, seen))
    end
  end
end
if ttl > 0 then
  local cutoff = expiry_now(now_in) - ttl
  for i = first, #ARGV, 3 do
    track_message(ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), cutoff)
  end
  for i = 3, last, 3 do recompute_unread(ARGV[i]) end
  expire_before(cutoff)
else
  for i = 3, last, 3 do recompute_unread(ARGV[i]) end
end

local after = rcall('HGETALL', KEYS[2])
local sum = 0
for i = 2, #after, 2 do
  sum = sum + (tonumber(after[i]) or 0)
end

if fresh then
  rcall('HSET', KEYS[1], 'total', sum, 'version', 1, 'epoch', epoch_new)
  return { epoch_new, 1, sum, exists and 'replaced' or 'created' }
end

local changed = #before ~= #after
if not changed then
  local old = {}
  for i = 1, #before, 2 do old[before[i]] = before[i + 1] end
  for i = 1, #after, 2 do
    if old[after[i]] ~= after[i + 1] then changed = true end
  end
end
local meta = rcall('HMGET', KEYS[1], 'epoch', 'version', 'total')
if not changed and tonumber(meta[3]) == sum then
  return { meta[1], tonumber(meta[2]) or 0, sum, 'unchanged' }
end
rcall('HSET', KEYS[1], 'total', sum, 'version', 1, 'epoch', epoch_new)
return { epoch_new, 1, sum, 'merged' }
