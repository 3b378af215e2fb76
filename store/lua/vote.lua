-- vote.lua: record one person's vote on a quorum question (ask-user.md §6)
-- and, in the same step, end the question when the vote decides it: as
-- answered once quorum people gave the same answer, as no_quorum once
-- agreement has become impossible. An ending is written and pushed exactly
-- as end.lua writes one: both are loaded after ending.lua, whose
-- question, write_end and messages they use.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  result list          <prefix>result:{<id>}
-- KEYS[3]  legacy messages list <prefix>messages:{<id>} (see add_message.lua)
-- ARGV[1]  the voter ("<platform>:<user id>")
-- ARGV[2]  the vote's JSON ({"by":…,"answers":…,"at":…})
-- ARGV[3]  the answer's key (equal answers have equal keys), '' for an
--          abstention
-- ARGV[4]  the answer's JSON (what the result's answers holds if it wins)
-- ARGV[5]  quorum
-- ARGV[6]  how many people may vote
-- ARGV[7]  now, unix ms
-- ARGV[8]  retention in ms
-- ARGV[9]  the answered result JSON without answers, votes and stamps
-- ARGV[10] the no_quorum result JSON without votes and stamps
-- ARGV[11] the timeout result JSON (written instead when the deadline is
--          at or before now), without stamps
--
-- Hash fields it keeps: vote:<voter> (the key, '' for an abstention),
-- voted (how many voted), tally:<key> (votes for an answer), tallyv:<key>
-- (the first JSON of that answer), votes (the JSON list of every vote).
--
-- Returns
--   {1, {HGETALL...}, {messages...}}  this vote ended the question (or the
--                                     deadline had passed: timeout)
--   {0, {HGETALL...}, {messages...}}  already ended: nothing changed
--   {2, {HGETALL...}}                 recorded; the question stays open
--   {3, {HGETALL...}}                 this person had voted: nothing changed
--   {-1}                              missing: no such question
local all, fields = question()
if #all == 0 then
  return {-1}
end
-- finish writes the ending; a timeout carries the votes given so far, as
-- end.lua's endings do; the other endings' bodies hold them already.
local function finish(final, body, with_votes)
  write_end(fields, final, body, ARGV[7], ARGV[8], with_votes)
  return {1, redis.call('HGETALL', KEYS[1]), messages(fields['msgs'])}
end
if fields['status'] ~= 'pending' then
  return {0, all, messages(fields['msgs'])}
end
local deadline = tonumber(fields['deadline'] or '')
if deadline and deadline <= tonumber(ARGV[7]) then
  return finish('no_answer', ARGV[11], true)
end
if fields['vote:' .. ARGV[1]] then
  return {3, all}
end
local votes = fields['votes'] or '[]'
if votes == '[]' then
  votes = '[' .. ARGV[2] .. ']'
else
  votes = string.sub(votes, 1, -2) .. ',' .. ARGV[2] .. ']'
end
local voted = tonumber(fields['voted'] or '0') + 1
redis.call('HSET', KEYS[1], 'vote:' .. ARGV[1], ARGV[3], 'voted', voted, 'votes', votes)
fields['votes'] = votes
local quorum, voters = tonumber(ARGV[5]), tonumber(ARGV[6])
local best = 0
if ARGV[3] ~= '' then
  local n = redis.call('HINCRBY', KEYS[1], 'tally:' .. ARGV[3], 1)
  redis.call('HSETNX', KEYS[1], 'tallyv:' .. ARGV[3], ARGV[4])
  if n >= quorum then
    local answers = redis.call('HGET', KEYS[1], 'tallyv:' .. ARGV[3])
    local body = string.sub(ARGV[9], 1, -2) .. ',"answers":{"answers":' .. answers .. '},"votes":' .. votes .. '}'
    return finish('answered', body, false)
  end
end
-- Agreement is impossible once no answer, with every vote still to come,
-- can reach the quorum.
for k, v in pairs(fields) do
  if string.sub(k, 1, 6) == 'tally:' then
    best = math.max(best, tonumber(v))
  end
end
if ARGV[3] ~= '' then
  best = math.max(best, tonumber(redis.call('HGET', KEYS[1], 'tally:' .. ARGV[3])))
end
if best + (voters - voted) < quorum then
  return finish('no_answer', string.sub(ARGV[10], 1, -2) .. ',"votes":' .. votes .. '}', false)
end
return {2, redis.call('HGETALL', KEYS[1])}
