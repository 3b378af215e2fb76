-- ending.lua: what end.lua and vote.lua share, put in front of each of
-- them when the store loads them (scripts.go): reading the question and
-- writing its ending, one way for both.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  result list          <prefix>result:{<id>}
-- KEYS[3]  legacy messages list <prefix>messages:{<id>} (see add_message.lua)
--
-- Returns nothing itself: it defines messages, question and write_end for
-- the script after it.

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

-- The question hash: HGETALL's flat list, and its fields by name.
local function question()
  local all = redis.call('HGETALL', KEYS[1])
  local fields = {}
  for i = 1, #all, 2 do
    fields[all[i]] = all[i + 1]
  end
  return all, fields
end

-- write_end ends the pending question of fields with status final and the
-- result body (JSON ending in '}'): it adds who pressed Seen (ask-user.md
-- §5) and, when with_votes is set, the votes of a quorum question (§6),
-- then the createdAt and endedAt (now) stamps; stores and pushes the
-- result; makes the hash, the result list and a legacy messages list
-- expire after retention ms; and updates fields to match. It returns the
-- result JSON.
local function write_end(fields, final, body, now, retention, with_votes)
  if fields['acked'] then
    body = string.sub(body, 1, -2) .. ',"acknowledgedBy":' .. fields['acked'] .. '}'
  end
  if with_votes and fields['votes'] then
    body = string.sub(body, 1, -2) .. ',"votes":' .. fields['votes'] .. '}'
  end
  local result = string.sub(body, 1, -2) .. ',"createdAt":' .. (fields['created'] or '0') .. ',"endedAt":' .. now .. '}'
  redis.call('HSET', KEYS[1], 'status', final, 'result', result, 'ended', now)
  redis.call('RPUSH', KEYS[2], result)
  redis.call('PEXPIRE', KEYS[1], retention)
  redis.call('PEXPIRE', KEYS[2], retention)
  if not fields['msgs'] then
    redis.call('PEXPIRE', KEYS[3], retention)
  end
  fields['status'], fields['result'], fields['ended'] = final, result, now
  return result
end
