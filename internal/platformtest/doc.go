// Package platformtest is the test code the platform channels (telegram/,
// discord/, slack/) share where it is the same for each.
//
// The check that no secret leaves a channel: BrokenAPI is a platform API
// that fails every call in one way a network does (Faults), with the
// platform's own answers and faults as options; EngineCalls makes the
// engine's calls of a channel against it; NoSecret looks through every
// text of the errors that came back (ErrorTexts) and through the log.
//
// The pieces of a platform's test environment: Agent asks and reads
// results through Redis as an agent does, Clock is an engine clock whose
// time of day a test moves ahead, Resolver routes a request, LogWriter
// sends a replica's log to the test's, PanicLogs counts recovered panics,
// and PromptOfADeadReplica leaves what a replica leaves that died right
// after posting a prompt.
//
// SyncBuffer, a log and output sink for concurrent writers, serves tests
// beyond the platforms too. What differs per platform (its fake, how its
// replicas start and stop, the calls and faults only it has) stays in the
// platform's own tests.
package platformtest
