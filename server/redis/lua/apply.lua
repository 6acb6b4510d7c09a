--[[
  Apply one event about one conversation to one user's unread state.
  KEYS[1] {u:<id>}:v2:meta   hash: total, mentions, version, epoch, term (includes/unread.lua)
  KEYS[2] {u:<id>}:v2:convs  hash: conversation id -> its record (registers and derived values, includes/unread.lua)
  KEYS[3] {u:<id>}:v2:gone   hash: conversation id -> when (ms) the user left it or it was deleted (includes/gone.lua)
  KEYS[4] {u:<id>}:v2:times  zset: unread messages that may still expire -> createdAt ms (see includes/ttl.lua)
  KEYS[5] {u:<id>}:v2:ment   zset: '<conv>:<seq>' of messages that mention the user (score 0, lex order)
  ARGV[1] conversation id
  ARGV[2] a message seq seen in the conversation, 0 for none
  ARGV[3] a read cursor of the user in the conversation, 0 for none
  ARGV[4] the createdAt (ms) of the message ARGV[2], 0 when unknown (optional)
  ARGV[5] unread expiry in ms, 0 = off (optional)
  ARGV[6] "now" in ms, the instant expiry is judged at (optional, '' for none: tests pass it; without it, the
          server's TIME)
  ARGV[7..] optional named parts, in any order:
          'mention'                  message ARGV[2] mentions the user
          'own'                      the user sent message ARGV[2]: it never counts for them, and their cursor
                                     moves over it only if nothing unread lies below it (includes/unread.lua)
          'deleted'                  its sender (someone else) deleted message ARGV[2]: it never counts, and its
                                     mention of the user goes (one that comes later is not taken); it moves
                                     neither the cursor nor a mark (includes/unread.lua)
          'mute', version, 0|1       the membership's mute register (the higher version wins)
          'mark', version, atSeq     its mark register (the higher version wins)
          'clear', version           the highest mark a read cleared (max)
  Returns { unread, total, version, epoch, changed, mentions, totalMentions, muted, markVersion } where changed
  is 1 when the user's state changed (version then grew by exactly 1, or an expiry in other conversations started
  a new epoch at version 1) and 0 otherwise, and markVersion is the mark's version while the conversation is
  marked unread, else 0; returns { -1 } and writes nothing when the user's state is missing (or fenced: written
  under another replication term, includes/fence.lua): the caller rebuilds it from the database.
  Idempotent and order-insensitive: seen, read, aged and cleared only grow, mentions and own messages only join a
  set, mute and mark keep the highest version, the cursor always moves over every own message right above it, and
  every value is a function of those registers (includes/unread.lua), so
  replaying an event or swapping two events ends in the same state (a deletion and its message's event too: the
  deleted message joins the deleted set, which no mention of it may pass). Events for a
  conversation the user left are ignored.
  Its work does not grow with the user's conversations: it reads and writes the event's conversation (one hash
  field, its record) and the two sums, which it moves by that conversation's change and never recomputes (with expiry on, add what expires
  and the timestamps a read covers, includes/ttl.lua). So a stored sum that drifted from its parts (it cannot
  through these scripts; a manual write or a bug can) stays off by exactly its drift, neither grown nor hidden,
  until a sync finds it (snapshot.lua answers { -2 }) or reconciliation does, and rebuild.lua repairs it,
  counting it in `repairs`, with a new epoch that makes every client resync. With expiry on, messages created
  before now - ARGV[5] stop counting; a push describes one conversation, so when expiry changes another one the
  call starts a new epoch. Replaying an event at a later "now" may expire more, as any call at that instant
  would; at the same "now" it changes nothing.
]]
local rcall = redis.call
--- @include "layout"

local BAD = 'ERR tally apply: expected conversation id, seen seq >= 0, read seq >= 0, createdAt ms >= 0, ttl ms >= 0, now ms >= 0 or empty, then mention | own | deleted | mute version 0|1 | mark version seq | clear version'

local conv = ARGV[1]
local seen_in = tonumber(ARGV[2])
local read_in = tonumber(ARGV[3])
local created_in = tonumber(ARGV[4] or '0')
local ttl = tonumber(ARGV[5] or '0')
local now_in = nil
if ARGV[6] and ARGV[6] ~= '' then
  now_in = tonumber(ARGV[6])
  if now_in == nil or now_in < 0 then return redis.error_reply(BAD) end
end
if conv == nil or conv == '' or seen_in == nil or read_in == nil or seen_in < 0 or read_in < 0
  or created_in == nil or created_in < 0 or ttl == nil or ttl < 0 or (ttl > 0 and not numeric(conv)) then
  return redis.error_reply(BAD)
end

local mention, own, deleted, mute_v, muted, mark_v, mark_at, cleared = false, false, false, nil, nil, nil, nil, nil
local i = 7
while i <= #ARGV do
  local part = ARGV[i]
  if part == 'mention' then
    mention = true
    i = i + 1
  elseif part == 'own' then
    own = true
    i = i + 1
  elseif part == 'deleted' then
    deleted = true
    i = i + 1
  elseif part == 'mute' then
    mute_v, muted = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    if mute_v == nil or mute_v < 0 or (muted ~= 0 and muted ~= 1) then return redis.error_reply(BAD) end
    i = i + 3
  elseif part == 'mark' then
    mark_v, mark_at = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    if mark_v == nil or mark_v < 0 or mark_at == nil or mark_at < 0 then return redis.error_reply(BAD) end
    i = i + 3
  elseif part == 'clear' then
    cleared = tonumber(ARGV[i + 1])
    if cleared == nil or cleared < 0 then return redis.error_reply(BAD) end
    i = i + 2
  else
    return redis.error_reply(BAD)
  end
end
-- Nobody mentions themselves (the mention rule leaves the sender out).
-- The sender's own deleted message is simply own.
if (mention or own or deleted) and (seen_in < 1 or not numeric(conv))
  or (mention and own) or (deleted and (mention or own)) then
  return redis.error_reply(BAD)
end

local meta = rcall('HMGET', KEYS[1], 'total', 'version', 'epoch', 'mentions', 'term')
local total = tonumber(meta[1]) or 0
local version = tonumber(meta[2]) or 0
local epoch = meta[3]
local total_mentions = tonumber(meta[4]) or 0
local raw = rcall('HGET', KEYS[2], conv)

-- The common event (only the two registers: a message reaching a member, the sender's own message when nothing
-- unread lies below it, a view; expiry off) on a single Redis (a cluster node checks its term: the general path),
-- for a conversation that has seen or read something (else it may be gone) and no mentions or own messages pending,
-- takes this straight path, the general one below specialised to it: the same registers, rule (includes/unread.lua
-- recompute, with no mention or own message to count) and writes. It calls and defines no function: Redis runs a
-- script's whole body on every call, so each function the includes below define is a new closure each time
-- (docs/benchmarks.md). scripts.int.test.ts checks, event by event, that both paths leave the same state and answer
-- the same.
local r = nil
if ttl == 0 and not (mention or deleted or mute_v or mark_v or cleared) and epoch and meta[5] == '-'
  and ((raw and string.sub(raw, 1, 4) ~= '0:0:') or rcall('HEXISTS', KEYS[3], conv) == 0)
  and not (numeric(conv) and rcall('EXISTS', KEYS[5]) == 1) then
  r = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
  if raw then
    local i = 0
    for n in string.gmatch(raw, '[^:]+') do
      i = i + 1
      r[i] = tonumber(n) or 0
    end
  end
  -- An own message above something unread joins the own set: the general path.
  if own then
    if math.max(r[READ], read_in) >= seen_in - 1 then read_in = math.max(read_in, seen_in) else r = nil end
  end
end
if r then
  local seen, read, aged = math.max(r[SEEN], seen_in), math.max(r[READ], read_in), r[AGED]
  if aged > 0 and aged <= read then aged = 0 end
  local marked = 0
  if r[MARK_V] > r[CLEARED] and read <= r[MARK_AT] then marked = 1 end
  local unread = math.max(0, seen - math.max(read, aged))
  if unread == 0 and marked == 1 then unread = 1 end
  -- No mention counts (none pending): a count stored without them goes, as recompute would drop it.
  local mentions_before = r[MENTIONS]
  local changed = 0
  if unread ~= r[UNREAD] or mentions_before ~= 0 or marked ~= r[MARKED] then
    changed = 1
    if r[MUTED] == 1 then total = total - mentions_before else total = total + unread - r[UNREAD] end
    total_mentions = total_mentions - mentions_before
    version = version + 1
  end
  if changed == 1 or seen ~= r[SEEN] or read ~= r[READ] or aged ~= r[AGED] then
    r[SEEN], r[READ], r[UNREAD], r[MENTIONS], r[MARKED], r[AGED] = seen, read, unread, 0, marked, aged
    local last = FIELDS
    while last > 0 and r[last] == 0 do last = last - 1 end
    if last == 0 then
      rcall('HDEL', KEYS[2], conv)
    else
      rcall('HSET', KEYS[2], conv, table.concat(r, ':', 1, last))
    end
  end
  if changed == 1 then
    rcall('HSET', KEYS[1], 'total', total, 'version', version, 'epoch', epoch, 'mentions', total_mentions)
  end
  local mark = 0
  if marked == 1 then mark = r[MARK_V] end
  return { unread, total, version, epoch, changed, 0, total_mentions, r[MUTED], mark }
end

--- @include "unread"
--- @include "ttl"
--- @include "fence"

if not epoch or fenced(meta[5]) then
  return { -1 }
end
r = parse_record(raw)
-- A conversation marked gone has no registers seen or read (includes/gone.lua drops its record, and no event writes
-- one after the mark; expiry may still raise `aged` in one from timestamps left behind), so only such a one can be.
if r[SEEN] == 0 and r[READ] == 0 and rcall('HEXISTS', KEYS[3], conv) == 1 then
  return { 0, total, version, epoch, 0, 0, total_mentions, 0, 0 }
end
local before = view(r)
local read_old = r[READ]
r[SEEN] = math.max(r[SEEN], seen_in)
r[READ] = math.max(read_old, read_in)

local cutoff, E = 0, nil
if ttl > 0 then
  E = expiry()
  cutoff = E.now(now_in) - ttl
  if r[READ] ~= read_old then E.forget_times(conv, math.max(read_old, r[AGED]), math.min(r[READ], r[SEEN])) end
  -- An own message never counts, so it never expires.
  if seen_in > 0 and created_in > 0 and not own then E.track_message(conv, r, seen_in, created_in, cutoff) end
end
if mention or deleted then
  local X = extras()
  if deleted then
    X.add_deleted(conv, r, seen_in)
    rcall('ZREM', KEYS[5], X.mention_member(conv, seen_in))
  else
    X.add_mention(conv, r, seen_in)
  end
end
if own then extras().add_own(conv, r, seen_in) end
if mute_v or mark_v or cleared then extras().merge_state(r, mute_v, muted, mark_v, mark_at, cleared) end
recompute(conv, r)
put_record(conv, r)
local after = view(r)
local delta = after[5] - before[5]
local delta_mentions = after[2] - before[2]

local new_epoch = false
if ttl > 0 then
  local expired, d, dm = E.expire_before(cutoff)
  delta = delta + d
  delta_mentions = delta_mentions + dm
  for _, c in ipairs(expired) do
    if c == conv then
      r = parse_record(rcall('HGET', KEYS[2], conv))
      after = view(r)
    elseif not new_epoch then
      new_epoch = true
      epoch = E.next_epoch(epoch)
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
-- Expiry never moves a mark (it depends on read, not aged): the record still holds its version.
local mark = 0
if after[4] == 1 then mark = r[MARK_V] end
return { after[1], total, version, epoch, changed, after[2], total_mentions, after[3], mark }
