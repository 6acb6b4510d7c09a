--[[
  The derived count and the epoch, shared by every script that writes unread state (`--- @include "unread"`,
  pasted by scripts.ts). Expects the unread scripts' KEYS order: KEYS[2] unread, KEYS[3] seen, KEYS[4] read,
  KEYS[7] aged.
  A conversation's unread is max(0, seen - max(read, aged)), a function of three max-registers; aged is raised
  only by unread expiry (includes/ttl.lua), so with expiry off it stays empty and unread = max(0, seen - read).
]]

-- Derives one conversation's unread from its registers and stores it (an aged mark the read cursor has caught
-- up with says nothing more and goes). Returns old, new.
local function recompute_unread(conv)
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

-- Clients that see a new epoch resync instead of patching one conversation. The suffix only has to be unique,
-- so it is always the server's TIME (never a "now" a caller passed for expiry).
local function next_epoch(epoch)
  local t = rcall('TIME')
  return string.gsub(epoch, '~.*$', '') .. '~' .. t[1] .. string.format('%06d', tonumber(t[2]))
end
