--[[
  Read one user's whole unread state in one atomic step, so a snapshot is never torn.
  KEYS[1] {u:<id>}:meta   KEYS[2] {u:<id>}:unread
  KEYS[3..7] seen, read, gone, times, aged (optional: only to expire, in the unread scripts' order)
  ARGV[1] unread expiry in ms, 0 = off (optional; needs all seven keys)
  ARGV[2] "now" in ms, the instant expiry is judged at (optional: tests pass it; without it, the server's TIME)
  With two keys it only reads. With seven, messages created before now - ARGV[1] first stop counting (expiry is
  evaluated at read time); if that changed any count, the total is adjusted and a new epoch starts at version 1,
  so clients holding older state resync.
  Returns { epoch, version, total, conv1, unread1, conv2, unread2, ... } (only conversations with unread > 0);
  with seven keys { epoch, version, total, expired, conv1, unread1, ... } where expired is 1 when a new epoch
  was started; { -1 } when the user's state is missing and must be rebuilt from the database;
  { -2 } when the stored total differs from the sum of the unreads and must be repaired (rebuild.lua) first.
]]
local rcall = redis.call
--- @include "unread"
--- @include "ttl"

local full = #KEYS >= 7
local ttl = tonumber(ARGV[1] or '0')
local now_in = ARGV[2] and tonumber(ARGV[2])
if ttl == nil or ttl < 0 or (ARGV[2] and (now_in == nil or now_in < 0)) then
  return redis.error_reply('ERR tally snapshot: expected ttl ms >= 0, now ms >= 0')
end

local meta = rcall('HMGET', KEYS[1], 'epoch', 'version', 'total')
if not meta[1] then
  return { -1 }
end
local epoch = meta[1]
local version = tonumber(meta[2]) or 0
local total = tonumber(meta[3]) or 0
local sum = 0
for _, v in ipairs(rcall('HVALS', KEYS[2])) do
  sum = sum + (tonumber(v) or 0)
end
if sum ~= total then
  return { -2 }
end

local expired = 0
if full and ttl > 0 then
  local changed, delta = expire_before(expiry_now(now_in) - ttl)
  if #changed > 0 then
    expired = 1
    epoch = next_epoch(epoch)
    version = 1
    total = total + delta
    rcall('HSET', KEYS[1], 'total', total, 'version', version, 'epoch', epoch)
  end
end

local out = { epoch, version, total }
if full then out[4] = expired end
local flat = rcall('HGETALL', KEYS[2])
for i = 1, #flat, 2 do
  out[#out + 1] = flat[i]
  out[#out + 1] = flat[i + 1]
end
return out
