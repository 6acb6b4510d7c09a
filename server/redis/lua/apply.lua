--[[
  Apply one event about one conversation to one user's unread state.
  KEYS[1] {u:<id>}:meta    hash: total, version, epoch
  KEYS[2] {u:<id>}:unread  hash: conversation id -> unread count (absent = 0)
  KEYS[3] {u:<id>}:seen    hash: conversation id -> highest message seq seen (max-register)
  KEYS[4] {u:<id>}:read    hash: conversation id -> the user's read cursor (max-register)
  ARGV[1] conversation id
  ARGV[2] a message seq seen in the conversation, 0 for none
  ARGV[3] a read cursor of the user in the conversation, 0 for none
  Returns { unread, total, version, epoch, changed } where changed is 1 when the unread count changed
  (version then grew by exactly 1) and 0 otherwise; returns { -1 } and writes nothing when the user's
  state is missing (new user, Redis restarted or flushed): the caller rebuilds it from the database.
  Idempotent and order-insensitive: seen and read only grow, and unread = max(0, seen - read) is a
  function of them, so replaying an event or swapping two events ends in the same state.
]]
local rcall = redis.call

local conv = ARGV[1]
local seen_in = tonumber(ARGV[2])
local read_in = tonumber(ARGV[3])
if conv == nil or conv == '' or seen_in == nil or read_in == nil or seen_in < 0 or read_in < 0 then
  return redis.error_reply('ERR tally apply: expected conversation id, seen seq >= 0, read seq >= 0')
end

local meta = rcall('HMGET', KEYS[1], 'total', 'version', 'epoch')
if not meta[3] then
  return { -1 }
end
local total = tonumber(meta[1]) or 0
local version = tonumber(meta[2]) or 0
local epoch = meta[3]

local seen_old = tonumber(rcall('HGET', KEYS[3], conv)) or 0
local read_old = tonumber(rcall('HGET', KEYS[4], conv)) or 0
local unread_old = tonumber(rcall('HGET', KEYS[2], conv)) or 0

local seen = math.max(seen_old, seen_in)
local read = math.max(read_old, read_in)
local unread = math.max(0, seen - read)

if seen ~= seen_old then rcall('HSET', KEYS[3], conv, seen) end
if read ~= read_old then rcall('HSET', KEYS[4], conv, read) end
if unread == unread_old then
  return { unread, total, version, epoch, 0 }
end

if unread == 0 then
  rcall('HDEL', KEYS[2], conv)
else
  rcall('HSET', KEYS[2], conv, unread)
end
total = total + unread - unread_old
version = version + 1
rcall('HSET', KEYS[1], 'total', total, 'version', version)
return { unread, total, version, epoch, 1 }
