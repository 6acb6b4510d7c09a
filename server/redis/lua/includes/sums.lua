--[[
  A user's sums from every record (`--- @include "sums"`, after "unread"), for the scripts that read all of a
  user's conversations: snapshot.lua, rebuild.lua and inspect.lua. apply.lua never sums (see its header).
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

-- The user's two sums from the stored values (stored_values(), read now when not given): the sum of effective
-- values and the sum of mention counts.
local function stored_sums(v)
  v = v or stored_values()
  local total, mentions = 0, 0
  for _, r in pairs(v.records) do
    mentions = mentions + r[MENTIONS]
    if r[MUTED] == 1 then total = total + r[MENTIONS] else total = total + r[UNREAD] end
  end
  return total, mentions
end
