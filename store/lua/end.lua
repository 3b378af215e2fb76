-- end.lua: end a pending question, first writer wins; an ending that comes
-- at or after the question's deadline is a timeout.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  result list          <prefix>result:{<id>}
-- KEYS[3]  legacy messages list <prefix>messages:{<id>} (see add_message.lua)
-- ARGV[1]  final status: answered, no_answer or error
-- ARGV[2]  result JSON without createdAt/endedAt; it ends in '}' and the
--          script appends both stamps (created from the hash, ended = now)
--          and, when someone acknowledged the question, acknowledgedBy,
--          and the votes of a quorum question
-- ARGV[3]  now, unix ms
-- ARGV[4]  retention in ms
-- ARGV[5]  status of the timeout result, or '' when ARGV[2] is itself a
--          timeout
-- ARGV[6]  the timeout result JSON, like ARGV[2]: written instead of
--          ARGV[1]/ARGV[2] when the deadline field is at or before now
--
-- Returns
--   {1, {HGETALL...}, {messages...}}  won: the result (ARGV[2], or ARGV[6]
--                                     past the deadline) was written and pushed
--   {0, {HGETALL...}, {messages...}}  lost: the question had already ended;
--                                     its fields hold the result that won
--   {-1}                              missing: no such question
-- The question's messages: its msgs field split at newlines or, for a
-- question stored before that field, the legacy list of KEYS[3].
local function messages(msgs)
  if not msgs then
    return redis.call('LRANGE', KEYS[3], 0, -1)
  end
  local refs = {}
  for ref in string.gmatch(msgs, '[^\n]+') do
    refs[#refs + 1] = ref
  end
  return refs
end
local all = redis.call('HGETALL', KEYS[1])
if #all == 0 then
  return {-1}
end
local fields = {}
for i = 1, #all, 2 do
  fields[all[i]] = all[i + 1]
end
local status, created, deadline = fields['status'], fields['created'] or '0', tonumber(fields['deadline'] or '')
if status ~= 'pending' then
  return {0, all, messages(fields['msgs'])}
end
local final, body = ARGV[1], ARGV[2]
if ARGV[5] ~= '' and deadline and deadline <= tonumber(ARGV[3]) then
  final, body = ARGV[5], ARGV[6]
end
-- Whoever pressed Seen is part of every ending (ask-user.md §5).
if fields['acked'] then
  body = string.sub(body, 1, -2) .. ',"acknowledgedBy":' .. fields['acked'] .. '}'
end
-- So are the votes of a quorum question (ask-user.md §6).
if fields['votes'] then
  body = string.sub(body, 1, -2) .. ',"votes":' .. fields['votes'] .. '}'
end
local result = string.sub(body, 1, -2) .. ',"createdAt":' .. created .. ',"endedAt":' .. ARGV[3] .. '}'
redis.call('HSET', KEYS[1], 'status', final, 'result', result, 'ended', ARGV[3])
redis.call('RPUSH', KEYS[2], result)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
if not fields['msgs'] then
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
end
-- The hash as it now stands, without reading it again.
fields['status'], fields['result'], fields['ended'] = final, result, ARGV[3]
local now = {}
for k, v in pairs(fields) do
  now[#now + 1] = k
  now[#now + 1] = v
end
return {1, now, messages(fields['msgs'])}
