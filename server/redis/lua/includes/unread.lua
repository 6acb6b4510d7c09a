--[[
  The derived values and the epoch, shared by every script that writes unread state (`--- @include "unread"`,
  pasted by scripts.ts). Expects the unread scripts' KEYS order: KEYS[2] unread, KEYS[3] seen, KEYS[4] read,
  KEYS[7] aged, KEYS[8] ment, KEYS[9] mcount, KEYS[10] state (docs/consistency.md, "Mute, mentions and mark as
  unread").
  Registers per conversation: seen, read, aged (max-registers), the mentions set `ment` (grow-only; members at or
  below max(read, aged) can never count again and are dropped), and `state`, one string
  'muteVersion:muted:markVersion:markAt:cleared:marked' whose first five fields are registers (mute and mark: the
  higher version wins, ties by value; cleared: max) and whose last is derived.
  Derived, with floor = max(read, aged):
    mentions = |{ s in ment(conv) : floor < s <= seen }|
    marked   = markVersion > cleared and read <= markAt
    unread   = max(0, seen - floor), or 1 when that is 0 and marked
    effective = muted and mentions or unread          (what the total sums)
  aged is raised only by unread expiry (includes/ttl.lua); with expiry off it stays empty and floor = read.
]]

local function mention_member(conv, seq)
  return string.format('%010d:%010d', tonumber(conv), seq)
end

local function numeric(conv)
  return tostring(tonumber(conv)) == conv
end

-- { muteVersion, muted, markVersion, markAt, cleared, marked } from a stored state string (all 0 for none: nil, or
-- the false HGET answers for a missing field); the string stays as st.raw, so put_state writes only what changed.
local function parse_state(raw)
  local st = { 0, 0, 0, 0, 0, 0, raw = raw or nil }
  if raw then
    local i = 0
    for n in string.gmatch(raw, '[^:]+') do
      i = i + 1
      st[i] = tonumber(n) or 0
    end
  end
  return st
end

-- The state of conv (all 0 when it has none).
local function get_state(conv)
  return parse_state(rcall('HGET', KEYS[10], conv))
end

local function put_state(conv, st)
  local raw = nil
  if st[1] ~= 0 or st[3] ~= 0 or st[5] ~= 0 or st[6] ~= 0 then raw = table.concat(st, ':') end
  if raw == st.raw then return end
  if raw then rcall('HSET', KEYS[10], conv, raw) else rcall('HDEL', KEYS[10], conv) end
  st.raw = raw
end

-- Merges the registers (a nil argument leaves its register alone). Returns whether anything changed.
local function merge_state(st, mute_v, muted, mark_v, mark_at, cleared)
  local changed = false
  if mute_v and (mute_v > st[1] or (mute_v == st[1] and muted > st[2])) then
    st[1], st[2], changed = mute_v, muted, true
  end
  if mark_v and (mark_v > st[3] or (mark_v == st[3] and mark_at > st[4])) then
    st[3], st[4], changed = mark_v, mark_at, true
  end
  if cleared and cleared > st[5] then
    st[5], changed = cleared, true
  end
  return changed
end

-- What a client sees of conv, as stored: { unread, mentions, muted, marked, effective } (`st`: its state, if the
-- caller has read it already).
local function view(conv, st)
  st = st or get_state(conv)
  local unread = tonumber(rcall('HGET', KEYS[2], conv)) or 0
  local mentions = tonumber(rcall('HGET', KEYS[9], conv)) or 0
  local effective = unread
  if st[2] == 1 then effective = mentions end
  return { unread, mentions, st[2], st[6], effective }
end

local function same_view(a, b)
  return a[1] == b[1] and a[2] == b[2] and a[3] == b[3] and a[4] == b[4]
end

-- Adds a mention of the user in message seq of conv, unless the cursor (or expiry) is already past it.
local function add_mention(conv, seq)
  local read = tonumber(rcall('HGET', KEYS[4], conv)) or 0
  local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
  if seq > math.max(read, aged) then rcall('ZADD', KEYS[8], 0, mention_member(conv, seq)) end
end

-- Derives conv's values from its registers and stores them (an aged mark the read cursor has caught up with says
-- nothing more and goes). Returns the view before and after. What the caller has read already it may pass: `st`,
-- its state, merged already; `known`, { before = its view before the merge, seen = , read = } (apply.lua).
local function recompute_unread(conv, st, known)
  known = known or {}
  local before = known.before or view(conv)
  st = st or get_state(conv)
  local seen = known.seen or tonumber(rcall('HGET', KEYS[3], conv)) or 0
  local read = known.read or tonumber(rcall('HGET', KEYS[4], conv)) or 0
  local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
  if aged > 0 and aged <= read then
    rcall('HDEL', KEYS[7], conv)
    aged = 0
  end
  local floor = math.max(read, aged)

  local mentions = 0
  if numeric(conv) and rcall('EXISTS', KEYS[8]) == 1 then
    if floor > 0 then
      rcall('ZREMRANGEBYLEX', KEYS[8], '[' .. mention_member(conv, 0), '[' .. mention_member(conv, floor))
    end
    if seen > floor then
      mentions = rcall('ZLEXCOUNT', KEYS[8], '(' .. mention_member(conv, floor), '[' .. mention_member(conv, seen))
    end
  end
  local marked = 0
  if st[3] > st[5] and read <= st[4] then marked = 1 end
  local unread = math.max(0, seen - floor)
  if unread == 0 and marked == 1 then unread = 1 end

  if unread ~= before[1] then
    if unread == 0 then rcall('HDEL', KEYS[2], conv) else rcall('HSET', KEYS[2], conv, unread) end
  end
  if mentions ~= before[2] then
    if mentions == 0 then rcall('HDEL', KEYS[9], conv) else rcall('HSET', KEYS[9], conv, mentions) end
  end
  st[6] = marked
  put_state(conv, st)
  local effective = unread
  if st[2] == 1 then effective = mentions end
  return before, { unread, mentions, st[2], marked, effective }
end

-- Every stored value of the user, three calls however many conversations: unread and mentions map conv -> count,
-- state maps conv -> parsed state; order lists each conversation once, in the order the hashes return them
-- (unread, then mcount, then state).
local function stored_values()
  local v = { unread = {}, mentions = {}, state = {}, order = {} }
  local function list(conv)
    if v.unread[conv] == nil and v.mentions[conv] == nil and v.state[conv] == nil then v.order[#v.order + 1] = conv end
  end
  local flat = rcall('HGETALL', KEYS[2])
  for i = 1, #flat, 2 do
    list(flat[i])
    v.unread[flat[i]] = tonumber(flat[i + 1]) or 0
  end
  flat = rcall('HGETALL', KEYS[9])
  for i = 1, #flat, 2 do
    list(flat[i])
    v.mentions[flat[i]] = tonumber(flat[i + 1]) or 0
  end
  flat = rcall('HGETALL', KEYS[10])
  for i = 1, #flat, 2 do
    list(flat[i])
    v.state[flat[i]] = parse_state(flat[i + 1])
  end
  return v
end

-- The user's two sums from the stored values (stored_values(), read now when not given): the sum of effective
-- values and the sum of mention counts. O(conversations), so apply.lua never calls it (see its header).
local function stored_sums(v)
  v = v or stored_values()
  local total, mentions = 0, 0
  for conv, n in pairs(v.mentions) do
    mentions = mentions + n
    local st = v.state[conv]
    if st and st[2] == 1 then total = total + n end
  end
  for conv, n in pairs(v.unread) do
    local st = v.state[conv]
    if not (st and st[2] == 1) then total = total + n end
  end
  return total, mentions
end

-- Clients that see a new epoch resync instead of patching one conversation. The suffix only has to be unique,
-- so it is always the server's TIME (never a "now" a caller passed for expiry).
local function next_epoch(epoch)
  local t = rcall('TIME')
  return string.gsub(epoch, '~.*$', '') .. '~' .. t[1] .. string.format('%06d', tonumber(t[2]))
end
