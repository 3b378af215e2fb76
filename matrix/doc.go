// Package matrix is Matrix as a platform (ask-user.md §11): targets
// "matrix:!room:server", answerers "matrix:@user:server", on mautrix's
// client (maunium.net/go/mautrix).
package matrix
