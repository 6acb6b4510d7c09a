--[[
  Unread expiry (UNREAD_TTL_DAYS), pasted by scripts.ts into every script that says `--- @include "ttl"` (after
  `--- @include "unread"`, whose records it reads and writes). Its functions are built by `expiry()` only when a
  script needs them: while its TTL is on, and for `now` (inspect.lua reports its instant either way) and
  `forget_times` (old expiry state goes on removal). Redis runs a script's whole body on every call, so each
  function defined at the top would be a new closure on every apply.
  Expects the unread scripts' KEYS order: KEYS[2] convs, KEYS[4] times.
  times: ZSET of the user's unread messages that may still expire, member '<conversation %010d>:<seq %010d>',
         score = the message's createdAt in ms. Scores differ, so lex ranges over it are unspecified in Redis
         (ZREMRANGEBYLEX may remove other conversations' members): members are removed by name.
         A conversation's members lie at or below seen and, once expiry has been on since the cursor last moved,
         above max(read, aged) (one below says nothing: it would only raise aged under the cursor).
  aged:  a record's highest expired seq, a max-register kept only while above the read cursor.
  "now": the instant expiry is judged at, the caller's when it passed one (tests), else the server's TIME.
]]

local function expiry()
  local function times_member(conv, seq)
    return string.format('%010d:%010d', tonumber(conv), seq)
  end

  -- The caller's "now" (a number already validated) or, when it passed none, the server's TIME in ms.
  local function expiry_now(now)
    if now then return now end
    local t = rcall('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end

  -- Between batch() and flush(), tracked messages go in ZADDs of a thousand (a rebuild may track 100 000, as
  -- includes/unread.lua adds mentions). This instance's functions that read or remove members flush first; another
  -- expiry() or extras() (gone.lua's, recompute's) sees only what was flushed: call those after flush().
  local pending, n = nil, 0
  local function flush()
    if n > 0 then rcall('ZADD', KEYS[4], unpack(pending, 1, n)) end
    n = 0
  end

  -- Forgets the timestamps of conv's messages up to seq `to` (read, or covered by an expired later one); those at
  -- or below `from` (the old max(read, aged)) are gone already. The work is the smaller of the range and the set.
  local function forget_times(conv, from, to)
    if to <= from then return end
    flush()
    local size = rcall('ZCARD', KEYS[4])
    if size == 0 then return end
    local doomed = {}
    if to - from <= size then
      for seq = from + 1, to do doomed[#doomed + 1] = times_member(conv, seq) end
    else
      local prefix = times_member(conv, 0):sub(1, 11)
      for _, m in ipairs(rcall('ZRANGE', KEYS[4], 0, -1)) do
        if m:sub(1, 11) == prefix and tonumber(m:sub(12)) <= to then doomed[#doomed + 1] = m end
      end
    end
    for i = 1, #doomed, 1000 do
      rcall('ZREM', KEYS[4], unpack(doomed, i, math.min(i + 999, #doomed)))
    end
  end

  -- Counts every message of conv (record r) up to seq as expired; the caller stores r.
  local function raise_aged(conv, r, seq)
    local floor = math.max(r[READ], r[AGED])
    if seq > r[AGED] then r[AGED] = seq end
    forget_times(conv, floor, seq)
  end

  -- Message seq of conv (record r), created at created_ms, is unread unless at or below max(read, aged): remember
  -- when it expires, or if it already has (created before cutoff), count it as aged at once.
  local function track_message(conv, r, seq, created_ms, cutoff)
    if seq <= math.max(r[READ], r[AGED]) then return end
    if created_ms < cutoff then
      raise_aged(conv, r, seq)
    else
      local member = times_member(conv, seq)
      if not pending then return rcall('ZADD', KEYS[4], created_ms, member) end
      pending[n + 1], pending[n + 2] = created_ms, member
      n = n + 2
      if n >= 2000 then flush() end
    end
  end

  -- Expires every tracked message created before cutoff (ms), storing the records it changes. Returns the
  -- conversations whose values changed, the change of the total (the sum of effective values) and of the mentions'
  -- sum.
  local function expire_before(cutoff)
    flush()
    local upto = '(' .. string.format('%d', cutoff)
    local expired = rcall('ZRANGEBYSCORE', KEYS[4], '-inf', upto)
    if #expired == 0 then return {}, 0, 0 end
    rcall('ZREMRANGEBYSCORE', KEYS[4], '-inf', upto)
    local top = {}
    for _, m in ipairs(expired) do
      local conv = tostring(tonumber(string.sub(m, 1, 10)))
      local seq = tonumber(string.sub(m, 12))
      if seq > (top[conv] or 0) then top[conv] = seq end
    end
    local changed, delta, mentions = {}, 0, 0
    for conv, seq in pairs(top) do
      local r = parse_record(rcall('HGET', KEYS[2], conv))
      local before = view(r)
      raise_aged(conv, r, seq)
      recompute(conv, r)
      put_record(conv, r)
      local after = view(r)
      if not same_view(before, after) then
        changed[#changed + 1] = conv
        delta = delta + after[5] - before[5]
        mentions = mentions + after[2] - before[2]
      end
    end
    return changed, delta, mentions
  end

  -- Clients that see a new epoch resync instead of patching one conversation. The suffix only has to be unique,
  -- so it is always the server's TIME (never a "now" a caller passed for expiry).
  local function next_epoch(epoch)
    local t = rcall('TIME')
    return string.gsub(epoch, '~.*$', '') .. '~' .. t[1] .. string.format('%06d', tonumber(t[2]))
  end

  return {
    now = expiry_now,
    forget_times = forget_times,
    track_message = track_message,
    batch = function() pending = {} end,
    flush = function()
      flush()
      pending = nil
    end,
    expire_before = expire_before,
    next_epoch = next_epoch,
  }
end
