--[[
  Unread expiry (UNREAD_TTL_DAYS), pasted by scripts.ts into every script that says `--- @include "ttl"`.
  Expects the unread scripts' KEYS order: KEYS[2] unread, KEYS[3] seen, KEYS[4] read, KEYS[6] times, KEYS[7] aged.
  times: ZSET of the user's unread messages that may still expire, member '<conversation %010d>:<seq %010d>',
         score = the message's createdAt in ms (zero-padded members sort by conversation, then seq, in lex order).
  aged:  hash conversation -> highest expired seq, a max-register kept only while above the read cursor.
  A conversation's unread is max(0, seen - max(read, aged)); with expiry off aged stays empty.
]]
local function ttl_member(conv, seq)
  return string.format('%010d:%010d', tonumber(conv), seq)
end

local function ttl_now_ms()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Clients that see a new epoch resync instead of patching one conversation.
local function next_epoch(epoch)
  local t = rcall('TIME')
  return string.gsub(epoch, '~.*$', '') .. '~' .. t[1] .. string.format('%06d', tonumber(t[2]))
end

-- Forgets the timestamps of one conversation's messages up to seq (read, or covered by an expired later one).
local function ttl_forget(conv, seq)
  rcall('ZREMRANGEBYLEX', KEYS[6], '[' .. ttl_member(conv, 0), '[' .. ttl_member(conv, seq))
end

local function ttl_raise_aged(conv, seq)
  if seq > (tonumber(rcall('HGET', KEYS[7], conv)) or 0) then rcall('HSET', KEYS[7], conv, seq) end
  ttl_forget(conv, seq)
end

-- Derives one conversation's unread from its registers and stores it. Returns old, new.
local function ttl_recompute(conv)
  local seen = tonumber(rcall('HGET', KEYS[3], conv)) or 0
  local read = tonumber(rcall('HGET', KEYS[4], conv)) or 0
  local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
  if aged > 0 and aged <= read then
    rcall('HDEL', KEYS[7], conv)
    aged = 0
  end
  local old = tonumber(rcall('HGET', KEYS[2], conv)) or 0
  local new = math.max(0, seen - math.max(read, aged))
  if new ~= old then
    if new == 0 then rcall('HDEL', KEYS[2], conv) else rcall('HSET', KEYS[2], conv, new) end
  end
  return old, new
end

-- Message seq of conv, created at created_ms, is unread unless at or below max(read, aged): remember when it
-- expires, or if it already has, count it as aged at once.
local function ttl_track(conv, seq, created_ms, cutoff)
  local read = tonumber(rcall('HGET', KEYS[4], conv)) or 0
  local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
  if seq <= math.max(read, aged) then return end
  if created_ms < cutoff then
    ttl_raise_aged(conv, seq)
  else
    rcall('ZADD', KEYS[6], created_ms, ttl_member(conv, seq))
  end
end

-- Expires every tracked message created before cutoff (ms). Returns the conversations whose unread changed
-- and the change of their sum.
local function ttl_expire(cutoff)
  local upto = '(' .. string.format('%d', cutoff)
  local expired = rcall('ZRANGEBYSCORE', KEYS[6], '-inf', upto)
  if #expired == 0 then return {}, 0 end
  rcall('ZREMRANGEBYSCORE', KEYS[6], '-inf', upto)
  local top = {}
  for _, m in ipairs(expired) do
    local conv = tostring(tonumber(string.sub(m, 1, 10)))
    local seq = tonumber(string.sub(m, 12))
    if seq > (top[conv] or 0) then top[conv] = seq end
  end
  local changed, delta = {}, 0
  for conv, seq in pairs(top) do
    ttl_raise_aged(conv, seq)
    local old, new = ttl_recompute(conv)
    if new ~= old then
      changed[#changed + 1] = conv
      delta = delta + new - old
    end
  end
  return changed, delta
end
