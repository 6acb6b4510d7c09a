--[[
  A user's conversations all at once (`--- @include "sums"`, after "unread"), for the scripts that read them all:
  snapshot.lua, rebuild.lua and inspect.lua. apply.lua never sums (see its header).
]]

-- Every record of the user, one call however many conversations: records maps conv -> record, order lists the
-- conversations in the order the hash returns them.
local function stored_values()
  local v = { records = {}, order = {} }
  local flat = rcall('HGETALL', KEYS[2])
  for i = 1, #flat, 2 do
    v.order[#v.order + 1] = flat[i]
    v.records[flat[i]] = parse_record(flat[i + 1])
  end
  return v
end

-- What a client sees of every conversation, one call however many conversations, as parallel lists (conv, unread,
-- mentions, muted, marked, mark: the mark's version) of length n, in the order the hash returns them. A sync reads
-- all of a big user's conversations, so most records ('seen:read', 'seen:read:unread') are read with one pattern
-- each and no table; only those with more fields are parsed whole.
local function stored_views()
  local v = { conv = {}, unread = {}, mentions = {}, muted = {}, marked = {}, mark = {}, n = 0 }
  local flat = rcall('HGETALL', KEYS[2])
  local n = 0
  for i = 1, #flat, 2 do
    local raw = flat[i + 1]
    local unread, mentions, muted, marked, mark = 0, 0, 0, 0, 0
    local third = string.match(raw, '^%d+:%d+:(%d+)$')
    if third then
      unread = tonumber(third)
    elseif not string.find(raw, '^%d+:?%d*$') then
      local r = parse_record(raw)
      unread, mentions, muted, marked, mark = r[UNREAD], r[MENTIONS], r[MUTED], r[MARKED], r[MARK_V]
    end
    n = n + 1
    v.conv[n], v.unread[n], v.mentions[n], v.muted[n], v.marked[n], v.mark[n] = flat[i], unread, mentions, muted,
      marked, mark
  end
  v.n = n
  return v
end

-- The user's two sums from what the records show (stored_views(), read now when not given): the sum of effective
-- values and the sum of mention counts.
local function stored_sums(v)
  v = v or stored_views()
  local total, mentions = 0, 0
  for i = 1, v.n do
    mentions = mentions + v.mentions[i]
    if v.muted[i] == 1 then total = total + v.mentions[i] else total = total + v.unread[i] end
  end
  return total, mentions
end
