-- end.lua: end a pending question, first writer wins; an ending that comes
-- at or after the question's deadline is a timeout. Loaded after
-- ending.lua, whose question, write_end and messages it uses.
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
local all, fields = question()
if #all == 0 then
  return {-1}
end
local deadline = tonumber(fields['deadline'] or '')
if fields['status'] ~= 'pending' then
  return {0, all, messages(fields['msgs'])}
end
local final, body = ARGV[1], ARGV[2]
if ARGV[5] ~= '' and deadline and deadline <= tonumber(ARGV[3]) then
  final, body = ARGV[5], ARGV[6]
end
-- Whoever pressed Seen, and the votes of a quorum question, are part of
-- every ending.
write_end(fields, final, body, ARGV[3], ARGV[4], true)
-- The hash as it now stands, without reading it again.
local now = {}
for k, v in pairs(fields) do
  now[#now + 1] = k
  now[#now + 1] = v
end
return {1, now, messages(fields['msgs'])}
