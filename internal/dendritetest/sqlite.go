package dendritetest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// databases are the SQLite files configTemplate names, one per component.
var databases = []string{
	"federationapi.db", "keyserver.db", "mediaapi.db", "mscs.db",
	"relayapi.db", "roomserver.db", "syncapi.db", "userapi.db",
}

// writeDatabases creates every component's SQLite file in dir as an empty
// database in WAL mode, before Dendrite first opens it.
//
// Dendrite opens SQLite with only a busy timeout (internal/sqlutil:
// sqliteDSNExtension; the connection string's query is dropped by
// ParseFileURI), so its files are in SQLite's default rollback-journal
// mode, where a reader blocks a writer and a reader that then writes is
// refused at once with SQLITE_BUSY, the busy timeout notwithstanding. On
// a loaded machine the sync API's writer met that, and Dendrite panicked
// ("roomserver output log: write new event failure") and exited, failing
// every later test. A database's journal mode is kept in its file (the
// header's read and write versions, 2 for WAL), so a file created in WAL
// mode stays in WAL mode: readers no longer block the writer.
func writeDatabases(dir string) error {
	page := emptyWALDatabase()
	for _, name := range databases {
		if err := os.WriteFile(filepath.Join(dir, name), page, 0o600); err != nil {
			return fmt.Errorf("dendritetest: create %s: %w", name, err)
		}
	}
	return nil
}

// emptyWALDatabase is an SQLite database with no table, in WAL mode: one
// 4,096-byte page holding the 100-byte database header and the empty
// sqlite_schema table's leaf page header (https://sqlite.org/fileformat2.html
// §1.3 and §1.6), as sqlite3 writes for "PRAGMA journal_mode=WAL" on a new
// file.
func emptyWALDatabase() []byte {
	const pageSize = 4096
	p := make([]byte, pageSize)
	copy(p, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(p[16:], pageSize)
	p[18], p[19] = 2, 2                   // file format write and read versions: WAL
	p[21], p[22], p[23] = 64, 32, 32      // payload fractions, fixed by the format
	binary.BigEndian.PutUint32(p[24:], 1) // file change counter
	binary.BigEndian.PutUint32(p[28:], 1) // database size in pages
	binary.BigEndian.PutUint32(p[44:], 4) // schema format number
	binary.BigEndian.PutUint32(p[56:], 1) // text encoding: UTF-8
	binary.BigEndian.PutUint32(p[92:], 1) // version-valid-for: the change counter
	binary.BigEndian.PutUint32(p[96:], 3046001)
	p[100] = 0x0d                                 // a leaf table b-tree page
	binary.BigEndian.PutUint16(p[105:], pageSize) // cell content starts at the page's end
	return p
}
