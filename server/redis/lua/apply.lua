--[[
  Apply one event about one conversation to one user's unread state.
  KEYS[1] {u:<id>}:meta    hash: total, mentions, version, epoch (and repairs, which rebuild.lua counts)
  KEYS[2] {u:<id>}:unread  hash: conversation id -> unread count (absent = 0)
  KEYS[3] {u:<id>}:seen    hash: conversation id -> highest message seq seen (max-register)
  KEYS[4] {u:<id>}:read    hash: conversation id -> the user's read cursor (max-register)
  KEYS[5] {u:<id>}:gone    hash: conversation id -> 1 once the user left it or it was deleted
  KEYS[6] {u:<id>}:times   zset: unread messages that may still expire -> createdAt ms (see includes/ttl.lua)
  KEYS[7] {u:<id>}:aged    hash: conversation id -> highest expired seq above the cursor (max-register)
  KEYS[8] {u:<id>}:ment    zset: '<conv>:<seq>' of messages that mention the user (score 0, lex order)
  KEYS[9] {u:<id>}:mcount  hash: conversation id -> mention count (absent = 0)
  KEYS[10] {u:<id>}:state  hash: conversation id -> mute and mark registers (includes/unread.lua)
  ARGV[1] conversation id
  ARGV[2] a message seq seen in the conversation, 0 for none
  ARGV[3] a read cursor of the user in the conversation, 0 for none
  ARGV[4] the createdAt (ms) of the message ARGV[2], 0 when unknown (optional)
  ARGV[5] unread expiry in ms, 0 = off (optional)
  ARGV[6] "now" in ms, the instant expiry is judged at (optional, '' for none: tests pass it; without it, the
          server's TIME)
  ARGV[7..] optional named parts, in any order:
          'mention'                  message ARGV[2] mentions the user
          'mute', version, 0|1       the membership's mute register (the higher version wins)
          'mark', version, atSeq     its mark register (the higher version wins)
          'clear', version           the highest mark a read cleared (max)
  Returns { unread, total, version, epoch, changed, mentions, totalMentions, muted, markVersion } where changed
  is 1 when the user's state changed (version then grew by exactly 1, or an expiry in other conversations started
  a new epoch at version 1) and 0 otherwise, and markVersion is the mark's version while the conversation is
  marked unread, else 0; returns { -1 } and writes nothing when the user's state is missing (or fenced: written
  under another replication term, includes/fence.lua): the caller rebuilds it from the database.
  Idempotent and order-insensitive: seen, read, aged and cleared only grow, mentions only join a set, mute and
  mark keep the highest version, and every value is a function of those registers (includes/unread.lua), so
  replaying an event or swapping two events ends in the same state. Events for a
  conversation the user left are ignored.
  Its work does not grow with the user's conversations: it reads and writes the event's conversation and the
  two sums, which it moves by that conversation's change and never recomputes (with expiry on, add what expires
  and the timestamps a read covers, includes/ttl.lua). So a stored sum that drifted from its parts (it cannot
  through these scripts; a manual write or a bug can) stays off by exactly its drift, neither grown nor hidden,
  until a sync finds it (snapshot.lua answers { -2 }) or reconciliation does, and rebuild.lua repairs it,
  counting it in `repairs`, with a new epoch that makes every client resync. With expiry on, messages created
  before now - ARGV[5] stop counting; a push describes one conversation, so when expiry changes another one the
  call starts a new epoch. Replaying an event at a later "now" may expire more, as any call at that instant
  would; at the same "now" it changes nothing.
]]
local rcall = redis.call
--- @include "unread"
--- @include "ttl"
--- @include "fence"

local function bad()
  return redis.error_reply('ERR tally apply: expected conversation id, seen seq >= 0, read seq >= 0, createdAt ms >= 0, ttl ms >= 0, now ms >= 0 or empty, then mention | mute version 0|1 | mark version seq | clear version')
end

local conv = ARGV[1]
local seen_in = tonumber(ARGV[2])
local read_in = tonumber(ARGV[3])
local created_in = tonumber(ARGV[4] or '0')
local ttl = tonumber(ARGV[5] or '0')
local now_in = nil
if ARGV[6] and ARGV[6] ~= '' then
  now_in = tonumber(ARGV[6])
  if now_in == nil or now_in < 0 then return bad() end
end
if conv == nil or conv == '' or seen_in == nil or read_in == nil or seen_in < 0 or read_in < 0
  or created_in == nil or created_in < 0 or ttl == nil or ttl < 0 or (ttl > 0 and not numeric(conv)) then
  return bad()
end

local mention, mute_v, muted, mark_v, mark_at, cleared = false, nil, nil, nil, nil, nil
local i = 7
while i <= #ARGV do
  local part = ARGV[i]
  if part == 'mention' then
    mention = true
    i = i + 1
  elseif part == 'mute' then
    mute_v, muted = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    if mute_v == nil or mute_v < 0 or (muted ~= 0 and muted ~= 1) then return bad() end
    i = i + 3
  elseif part == 'mark' then
    mark_v, mark_at = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    if mark_v == nil or mark_v < 0 or mark_at == nil or mark_at < 0 then return bad() end
    i = i + 3
  elseif part == 'clear' then
    cleared = tonumber(ARGV[i + 1])
    if cleared == nil or cleared < 0 then return bad() end
    i = i + 2
  else
    return bad()
  end
end
if mention and (seen_in < 1 or not numeric(conv)) then return bad() end

local meta = rcall('HMGET', KEYS[1], 'total', 'version', 'epoch', 'mentions', 'term')
if not meta[3] or fenced(meta[5]) then
  return { -1 }
end
local total = tonumber(meta[1]) or 0
local version = tonumber(meta[2]) or 0
local epoch = meta[3]
local total_mentions = tonumber(meta[4]) or 0

local seen_old = tonumber(rcall('HGET', KEYS[3], conv)) or 0
local read_old = tonumber(rcall('HGET', KEYS[4], conv)) or 0
-- A conversation marked gone has no registers (includes/gone.lua drops them, and nothing writes them after the
-- mark), so only one without any can be gone.
if seen_old == 0 and read_old == 0 and rcall('HEXISTS', KEYS[5], conv) == 1 then
  return { 0, total, version, epoch, 0, 0, total_mentions, 0, 0 }
end

local seen = math.max(seen_old, seen_in)
local read = math.max(read_old, read_in)
if seen ~= seen_old then rcall('HSET', KEYS[3], conv, seen) end
if read ~= read_old then rcall('HSET', KEYS[4], conv, read) end

local cutoff = 0
if ttl > 0 then
  cutoff = expiry_now(now_in) - ttl
  if read ~= read_old then
    local aged = tonumber(rcall('HGET', KEYS[7], conv)) or 0
    forget_times(conv, math.max(read_old, aged), math.min(read, seen))
  end
  if seen_in > 0 and created_in > 0 then track_message(conv, seen_in, created_in, cutoff) end
end
if mention then add_mention(conv, seen_in) end
local st = get_state(conv)
local before = view(conv, st)
merge_state(st, mute_v, muted, mark_v, mark_at, cleared)
local _, after = recompute_unread(conv, st, { before = before, seen = seen, read = read })
local delta = after[5] - before[5]
local delta_mentions = after[2] - before[2]

local new_epoch = false
if ttl > 0 then
  local expired, d, dm = expire_before(cutoff)
  delta = delta + d
  delta_mentions = delta_mentions + dm
  for _, c in ipairs(expired) do
    if c == conv then
      after = view(conv)
    elseif not new_epoch then
      new_epoch = true
      epoch = next_epoch(epoch)
      version = 0
    end
  end
end

local changed = 0
if not same_view(before, after) or new_epoch then
  changed = 1
  total = total + delta
  total_mentions = total_mentions + delta_mentions
  version = version + 1
  rcall('HSET', KEYS[1], 'total', total, 'version', version, 'epoch', epoch, 'mentions', total_mentions)
end
-- Expiry never moves a mark (it depends on read, not aged): st still holds its version.
local mark = 0
if after[4] == 1 then mark = st[3] end
return { after[1], total, version, epoch, changed, after[2], total_mentions, after[3], mark }
