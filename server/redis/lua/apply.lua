--[[
  Apply one event about one conversation to one user's unread state.
  KEYS[1] {u:<id>}:meta    hash: total, version, epoch, repairs
  KEYS[2] {u:<id>}:unread  hash: conversation id -> unread count (absent = 0)
  KEYS[3] {u:<id>}:seen    hash: conversation id -> highest message seq seen (max-register)
  KEYS[4] {u:<id>}:read    hash: conversation id -> the user's read cursor (max-register)
  KEYS[5] {u:<id>}:gone    hash: conversation id -> 1 once the user left it or it was deleted
  KEYS[6] {u:<id>}:times   zset: unread messages that may still expire -> createdAt ms (see includes/ttl.lua)
  KEYS[7] {u:<id>}:aged    hash: conversation id -> highest expired seq above the cursor (max-register)
  ARGV[1] conversation id
  ARGV[2] a message seq seen in the conversation, 0 for none
  ARGV[3] a read cursor of the user in the conversation, 0 for none
  ARGV[4] the createdAt (ms) of the message ARGV[2], 0 when unknown (optional)
  ARGV[5] unread expiry in ms, 0 = off (optional)
  ARGV[6] "now" in ms, the instant expiry is judged at (optional: tests pass it; without it, the server's TIME)
  Returns { unread, total, version, epoch, changed } where changed is 1 when the user's state changed
  (version then grew by exactly 1, or a repair or an expiry in other conversations started a new epoch at
  version 1) and 0 otherwise; returns { -1 } and writes nothing when the user's state is missing: the caller
  rebuilds it from the database.
  Idempotent and order-insensitive: seen, read and aged only grow, and unread = max(0, seen - max(read, aged))
  is a function of them, so replaying an event or swapping two events ends in the same state. Events for a
  conversation the user left are ignored. If the stored total has drifted from the sum of the unreads (it
  cannot through these scripts; a manual write or a bug can), the total is recomputed, `repairs` counts it,
  and a new epoch makes every client resync. With expiry on, messages created before now - ARGV[5] stop
  counting; a push describes one conversation, so when expiry changes another one the call starts a new epoch.
  Replaying an event at a later "now" may expire more, as any call at that instant would; at the same "now" it
  changes nothing.
]]
local rcall = redis.call
--- @include "unread"
--- @include "ttl"

local conv = ARGV[1]
local seen_in = tonumber(ARGV[2])
local read_in = tonumber(ARGV[3])
local created_in = tonumber(ARGV[4] or '0')
local ttl = tonumber(ARGV[5] or '0')
local now_in = ARGV[6] and tonumber(ARGV[6])
if conv == nil or conv == '' or seen_in == nil or read_in == nil or seen_in < 0 or read_in < 0
  or created_in == nil or created_in < 0 or ttl == nil or ttl < 0
  or (ttl > 0 and tostring(tonumber(conv)) ~= conv) or (ARGV[6] and (now_in == nil or now_in < 0)) then
  return redis.error_reply('ERR tally apply: expected conversation id, seen seq >= 0, read seq >= 0, createdAt ms >= 0, ttl ms >= 0, now ms >= 0')
end

local meta = rcall('HMGET', KEYS[1], 'total', 'version', 'epoch')
if not meta[3] then
  return { -1 }
end
local total = tonumber(meta[1]) or 0
local version = tonumber(meta[2]) or 0
local epoch = meta[3]

if rcall('HEXISTS', KEYS[5], conv) == 1 then
  return { 0, total, version, epoch, 0 }
end

local sum = 0
for _, v in ipairs(rcall('HVALS', KEYS[2])) do
  sum = sum + (tonumber(v) or 0)
end
local new_epoch = sum ~= total
if new_epoch then
  epoch = next_epoch(epoch)
  total = sum
  version = 0
  rcall('HINCRBY', KEYS[1], 'repairs', 1)
end

local seen_old = tonumber(rcall('HGET', KEYS[3], conv)) or 0
local read_old = tonumber(rcall('HGET', KEYS[4], conv)) or 0
local unread_old = tonumber(rcall('HGET', KEYS[2], conv)) or 0

local seen = math.max(seen_old, seen_in)
local read = math.max(read_old, read_in)
if seen ~= seen_old then rcall('HSET', KEYS[3], conv, seen) end
if read ~= read_old then rcall('HSET', KEYS[4], conv, read) end

local cutoff = 0
if ttl > 0 then
  cutoff = expiry_now(now_in) - ttl
  if read ~= read_old then
    local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
    forget_times(conv, math.max(read_old, aged), math.min(read, seen))
  end
  if seen_in > 0 and created_in > 0 then track_message(conv, seen_in, created_in, cutoff) end
end
local _, unread = recompute_unread(conv)
local delta = unread - unread_old

if ttl > 0 then
  local changed, d = expire_before(cutoff)
  delta = delta + d
  for _, c in ipairs(changed) do
    if c == conv then
      unread = tonumber(rcall('HGET', KEYS[2], conv)) or 0
    elseif not new_epoch then
      new_epoch = true
      epoch = next_epoch(epoch)
      version = 0
    end
  end
end

if unread == unread_old and not new_epoch then
  return { unread, total, version, epoch, 0 }
end
total = total + delta
version = version + 1
rcall('HSET', KEYS[1], 'total', total, 'version', version, 'epoch', epoch)
return { unread, total, version, epoch, 1 }
