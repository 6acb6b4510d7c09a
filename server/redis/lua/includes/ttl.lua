--[[
  Unread expiry (UNREAD_TTL_DAYS), pasted by scripts.ts into every script that says `--- @include "ttl"` (after
  `--- @include "unread"`, whose recompute_unread it uses). Only called while the script's TTL is on, except
  expiry_now (inspect.lua reports its instant either way) and drop_expiry (old expiry state goes on removal).
  Expects the unread scripts' KEYS order: KEYS[2] unread, KEYS[3] seen, KEYS[4] read, KEYS[6] times, KEYS[7] aged.
  times: ZSET of the user's unread messages that may still expire, member '<conversation %010d>:<seq %010d>',
         score = the message's createdAt in ms. Scores differ, so lex ranges over it are unspecified in Redis
         (ZREMRANGEBYLEX may remove other conversations' members): members are removed by name.
         A conversation's members lie at or below seen and, once expiry has been on since the cursor last moved,
         above max(read, aged) (one below says nothing: it would only raise aged under the cursor).
  aged:  hash conversation -> highest expired seq, a max-register kept only while above the read cursor.
  "now": the instant expiry is judged at, the caller's when it passed one (tests), else the server's TIME.
]]

local function times_member(conv, seq)
  return string.format('%010d:%010d', tonumber(conv), seq)
end

-- The caller's "now" (a number already validated) or, when it passed none, the server's TIME in ms.
local function expiry_now(now)
  if now then return now end
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Forgets the timestamps of conv's messages up to seq `to` (read, or covered by an expired later one); those at
-- or below `from` (the old max(read, aged)) are gone already. The work is the smaller of the range and the set.
local function forget_times(conv, from, to)
  if to <= from then return end
  local size = rcall('ZCARD', KEYS[6])
  if size == 0 then return end
  local doomed = {}
  if to - from <= size then
    for seq = from + 1, to do doomed[#doomed + 1] = times_member(conv, seq) end
  else
    local prefix = times_member(conv, 0):sub(1, 11)
    for _, m in ipairs(rcall('ZRANGE', KEYS[6], 0, -1)) do
      if m:sub(1, 11) == prefix and tonumber(m:sub(12)) <= to then doomed[#doomed + 1] = m end
    end
  end
  for i = 1, #doomed, 1000 do
    rcall('ZREM', KEYS[6], unpack(doomed, i, math.min(i + 999, #doomed)))
  end
end

-- Counts every message of conv up to seq as expired.
local function raise_aged(conv, seq)
  local read = tonumber(rcall('HGET', KEYS[4], conv)) or 0
  local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
  if seq > aged then rcall('HSET', KEYS[7], conv, seq) end
  forget_times(conv, math.max(read, aged), seq)
end

-- Message seq of conv, created at created_ms, is unread unless at or below max(read, aged): remember when it
-- expires, or if it already has (created before cutoff), count it as aged at once.
local function track_message(conv, seq, created_ms, cutoff)
  local read = tonumber(rcall('HGET', KEYS[4], conv)) or 0
  local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
  if seq <= math.max(read, aged) then return end
  if created_ms < cutoff then
    raise_aged(conv, seq)
  else
    rcall('ZADD', KEYS[6], created_ms, times_member(conv, seq))
  end
end

-- Expires every tracked message created before cutoff (ms). Returns the conversations whose values changed, the
-- change of the total (the sum of effective values) and of the mentions' sum.
local function expire_before(cutoff)
  local upto = '(' .. string.format('%d', cutoff)
  local expired = rcall('ZRANGEBYSCORE', KEYS[6], '-inf', upto)
  if #expired == 0 then return {}, 0, 0 end
  rcall('ZREMRANGEBYSCORE', KEYS[6], '-inf', upto)
  local top = {}
  for _, m in ipairs(expired) do
    local conv = tostring(tonumber(string.sub(m, 1, 10)))
    local seq = tonumber(string.sub(m, 12))
    if seq > (top[conv] or 0) then top[conv] = seq end
  end
  local changed, delta, mentions = {}, 0, 0
  for conv, seq in pairs(top) do
    raise_aged(conv, seq)
    local before, after = recompute_unread(conv)
    if not same_view(before, after) then
      changed[#changed + 1] = conv
      delta = delta + after[5] - before[5]
      mentions = mentions + after[2] - before[2]
    end
  end
  return changed, delta, mentions
end

-- Drops one conversation's expiry state (timestamps and aged mark), which may exist from when expiry was on.
-- Runs before its seen and read registers go: they bound the timestamps it may hold.
local function drop_expiry(conv)
  if tostring(tonumber(conv)) == conv then
    local seen = tonumber(rcall('HGET', KEYS[3], conv)) or 0
    local read = tonumber(rcall('HGET', KEYS[4], conv)) or 0
    local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
    forget_times(conv, math.max(read, aged), seen)
  end
  rcall('HDEL', KEYS[7], conv)
end
