--[[
  One user's unread state, shared by every script that reads or writes it (`--- @include "unread"`, pasted by
  scripts.ts, after "layout", whose names it uses). Expects the unread scripts' KEYS order: KEYS[1] meta, KEYS[2] convs, KEYS[3] gone, KEYS[4] times,
  KEYS[5] ment (docs/consistency.md, "The Redis layout").
  meta:  hash: total, mentions (the two sums), version, epoch, term (includes/fence.lua), repairs (rebuild.lua
         counts them), ticket (ticket.lua: taken by a rebuild before its database read; alone, it is no state).
  convs: hash conversation id -> its record, one string of numbers joined by ':' in the order of the field
         indices below, trailing zeros left out; a conversation whose fields are all 0 has no field. One field per
         conversation, so an event reads and writes one hash field, however many registers it touches.
  Registers of a record: seen, read, aged (max-registers), mute (muteVersion, muted: the higher version wins, ties
  by value), mark (markVersion, markAt: the same) and cleared (max); in the zset `ment`, the mentions set (members
  '<conv>:<seq>'; grow-only; members at or below max(read, aged) can never count again and are dropped) and the
  own set (members '<conv>:o<seq>': the user's own messages above their cursor; grow-only; members at or below read
  are dropped) and the deleted set (members '<conv>:d<seq>': others' messages their senders deleted, above the
  floor; grow-only; members at or below the floor are dropped; a deleted message's mention leaves the mentions set,
  and no mention of one joins it). The read cursor absorbs own messages (never deleted ones: a deletion by someone
  else is nothing the user did, so it moves neither their cursor nor a mark): whenever read + 1 is in the own set, read moves over it, so
  a send never reads anything (the database keeps its cursor by the same rule, docs/consistency.md "Own
  messages"). Derived, and kept in the record so that a snapshot or an event reads them without recomputing, with
  floor = max(read, aged):
    mentions = |{ s in ment(conv) : floor < s <= seen }|
    own      = |{ s in own(conv) : floor < s <= seen }|   (not stored: counted whenever the rest is)
    deleted  = |{ s in deleted(conv) : floor < s <= seen }|   (the same)
    marked   = markVersion > cleared and read <= markAt
    unread   = seen - floor - own - deleted, or 1 when that is 0 and marked
    effective = muted and mentions or unread          (what the total sums)
  aged is raised only by unread expiry (includes/ttl.lua); with expiry off it stays 0 and floor = read.
]]

-- A record from its stored string (all 0 for none: nil, or the false HGET answers for a missing field). Fields
-- FIELDS+1 … 2*FIELDS keep the values as stored, so put_record writes only when one changed.
local function parse_record(raw)
  local r = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
  if raw then
    local i = 0
    for n in string.gmatch(raw, '[^:]+') do
      i = i + 1
      n = tonumber(n) or 0
      r[i], r[FIELDS + i] = n, n
    end
  end
  return r
end

-- Stores the record if a field changed since it was read: its numbers joined by ':', trailing zeros left out, or
-- no field at all when every one is 0.
local function put_record(conv, r)
  local last, changed = 0, false
  for i = 1, FIELDS do
    if r[i] ~= 0 then last = i end
    if r[i] ~= r[FIELDS + i] then
      changed = true
      r[FIELDS + i] = r[i]
    end
  end
  if not changed then return end
  if last == 0 then
    rcall('HDEL', KEYS[2], conv)
  else
    rcall('HSET', KEYS[2], conv, table.concat(r, ':', 1, last))
  end
end

-- What a client sees of a conversation, as its record holds it: { unread, mentions, muted, marked, effective }.
local function view(r)
  local effective = r[UNREAD]
  if r[MUTED] == 1 then effective = r[MENTIONS] end
  return { r[UNREAD], r[MENTIONS], r[MUTED], r[MARKED], effective }
end

local function same_view(a, b)
  return a[1] == b[1] and a[2] == b[2] and a[3] == b[3] and a[4] == b[4]
end

-- What an event with mentions or registers needs, and rebuilds: built only then, since Redis runs a script's
-- whole body on every call and every function defined at the top would be a new closure each time.
local function extras()
  local function mention_member(conv, seq)
    return string.format('%010d:%010d', tonumber(conv), seq)
  end
  -- After every mention member of conv in lex order ('o' sorts after the digits), so no mention range meets one.
  local function own_member(conv, seq)
    return string.format('%010d:o%010d', tonumber(conv), seq)
  end
  -- Between the mention and the own members ('d' sorts after the digits, before 'o'): no range of either meets one.
  local function deleted_member(conv, seq)
    return string.format('%010d:d%010d', tonumber(conv), seq)
  end
  -- The members of one kind (`member`: mention_member or deleted_member) of conv in (floor, seen]; those at or below
  -- the floor can never count again and leave the set.
  local function count_in(member, conv, seen, floor)
    if floor > 0 then rcall('ZREMRANGEBYLEX', KEYS[5], '[' .. member(conv, 0), '[' .. member(conv, floor)) end
    if seen <= floor then return 0 end
    return rcall('ZLEXCOUNT', KEYS[5], '(' .. member(conv, floor), '[' .. member(conv, seen))
  end
  -- Between batch() and flush(), members added go in ZADDs of a thousand (a rebuild may add 100 000: one call each
  -- held Redis over half a second, docs/benchmarks.md "A mention flood"); otherwise each goes at once. Nothing in
  -- between may read or remove members of the set (count_own, count_mentions, gone.lua and recompute do): the
  -- held-back ones are not in it yet.
  local pending, n = nil, 0
  local function flush()
    if n > 0 then rcall('ZADD', KEYS[5], unpack(pending, 1, n)) end
    n = 0
  end
  local function zadd(member)
    if not pending then return rcall('ZADD', KEYS[5], 0, member) end
    pending[n + 1], pending[n + 2] = 0, member
    n = n + 2
    if n >= 2000 then flush() end
  end
  return {
    mention_member = mention_member,
    own_member = own_member,
    batch = function() pending = {} end,
    -- Writes what batch() held back, and ends the batch: the set is whole again for what reads it.
    flush = function()
      flush()
      pending = nil
    end,
    -- The user sent message seq of conv: a cursor right below it moves over it (nothing unseen lies between),
    -- else it joins the own set, to be counted out until the cursor passes it.
    add_own = function(conv, r, seq)
      if r[READ] >= seq - 1 then
        if seq > r[READ] then r[READ] = seq end
      else
        zadd(own_member(conv, seq))
      end
    end,
    -- Moves the cursor over the own messages right above it, drops those at or below it, and counts the rest in
    -- (floor, seen]. The caller recomputes with the cursor it leaves.
    count_own = function(conv, r)
      while r[READ] < r[SEEN] and rcall('ZSCORE', KEYS[5], own_member(conv, r[READ] + 1)) do
        r[READ] = r[READ] + 1
      end
      if r[READ] > 0 then
        rcall('ZREMRANGEBYLEX', KEYS[5], '[' .. own_member(conv, 0), '[' .. own_member(conv, r[READ]))
      end
      local floor = math.max(r[READ], r[AGED])
      if r[SEEN] <= floor then return 0 end
      return rcall('ZLEXCOUNT', KEYS[5], '(' .. own_member(conv, floor), '[' .. own_member(conv, r[SEEN]))
    end,
    -- Adds a mention of the user in message seq of conv, unless the cursor (or expiry) is already past it or the
    -- message was deleted (a deleted member at or below the floor went, but so would the mention).
    add_mention = function(conv, r, seq)
      if seq > math.max(r[READ], r[AGED]) and not rcall('ZSCORE', KEYS[5], deleted_member(conv, seq)) then
        zadd(mention_member(conv, seq))
      end
    end,
    -- Its sender deleted message seq of conv (someone else's): counted out until the floor passes it. The caller
    -- removes its mention (outside a batch: a batch's mentions are not in the set yet).
    add_deleted = function(conv, r, seq)
      if seq > math.max(r[READ], r[AGED]) then zadd(deleted_member(conv, seq)) end
    end,
    -- The deleted messages of conv in (floor, seen] (count_in). Rare: one call finds none, where count_in makes two.
    count_deleted = function(conv, seen, floor)
      local upto = math.max(seen, floor)
      if rcall('ZLEXCOUNT', KEYS[5], '[' .. deleted_member(conv, 0), '[' .. deleted_member(conv, upto)) == 0 then
        return 0
      end
      return count_in(deleted_member, conv, seen, floor)
    end,
    -- The mentions of conv in (floor, seen] (count_in).
    count_mentions = function(conv, seen, floor)
      return count_in(mention_member, conv, seen, floor)
    end,
    -- Merges the mute and mark registers (a nil argument leaves its register alone).
    merge_state = function(r, mute_v, muted, mark_v, mark_at, cleared)
      if mute_v and (mute_v > r[MUTE_V] or (mute_v == r[MUTE_V] and muted > r[MUTED])) then
        r[MUTE_V], r[MUTED] = mute_v, muted
      end
      if mark_v and (mark_v > r[MARK_V] or (mark_v == r[MARK_V] and mark_at > r[MARK_AT])) then
        r[MARK_V], r[MARK_AT] = mark_v, mark_at
      end
      if cleared and cleared > r[CLEARED] then r[CLEARED] = cleared end
    end,
  }
end

-- Derives the record's values from its registers, in place (the cursor moves over own messages right above it; an
-- aged mark the read cursor has caught up with says nothing more and goes). The caller stores it (put_record).
local function recompute(conv, r)
  local X, own = nil, 0
  if numeric(conv) and rcall('EXISTS', KEYS[5]) == 1 then
    X = extras()
    own = X.count_own(conv, r)
  end
  if r[AGED] > 0 and r[AGED] <= r[READ] then r[AGED] = 0 end
  local floor = math.max(r[READ], r[AGED])
  local mentions, deleted = 0, 0
  if X then
    mentions = X.count_mentions(conv, r[SEEN], floor)
    deleted = X.count_deleted(conv, r[SEEN], floor)
  end
  local marked = 0
  if r[MARK_V] > r[CLEARED] and r[READ] <= r[MARK_AT] then marked = 1 end
  local unread = math.max(0, r[SEEN] - floor - own - deleted)
  if unread == 0 and marked == 1 then unread = 1 end
  r[UNREAD], r[MENTIONS], r[MARKED] = unread, mentions, marked
end
