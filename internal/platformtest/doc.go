// Package platformtest is the test code the platform channels (telegram/,
// discord/, slack/) share, where it is the same for each: the check that
// no secret leaves a channel (BrokenAPI fails every call in one way a
// network does, ErrorTexts and NoSecret look through what came back and
// what was logged), the pieces of a test environment (Agent asks through
// Redis as an agent does, Clock is an engine clock a test moves ahead,
// Resolver routes a request, LogWriter sends a replica's log to the test's
// log, PanicLogs counts recovered panics) and SyncBuffer, a log sink for
// concurrent writers. What differs per platform (its fake, its replicas,
// the calls and faults only it has) stays in the platform's own tests.
package platformtest
