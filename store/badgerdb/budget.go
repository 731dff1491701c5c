package badgerdb

import "github.com/dgraph-io/ristretto/v2/z"

// Badger's memory budget: the sizes that decide how much memory the store
// holds, in one place (issue 38: a daemon that lives beside an editor).
// Badger's defaults suit a database server: five memtables of 64 MB, each
// an arena of 64 MB plus 30 % filled as writes arrive and given back to
// the Go heap only to be zeroed and filled again, and every flush building
// its level-0 table whole in memory, as large as the memtable. Mining
// 20,000 small files held 83 MB of arenas and 64 MB of table-building
// buffers live, and the Go heap grows to twice what is live (BENCHMARKS.md).
//
// Other parts size themselves from these (a free-space reserve must cover
// a memtable flushed and a value log file extended), so read them from
// here rather than repeating the numbers.
const (
	// MemTableSize is one memtable's size. Badger bounds one transaction
	// at 15 % of it (ErrTxnTooBig): 32 MB allows 4.8 MB, room for a
	// drawer of MaxContentBytes with its records, and for the drawers of
	// one mined file of the default 2 MiB max_file_bytes, text or markup,
	// with dedup on; 24 MB did not hold that file (mine tests).
	MemTableSize = 32 << 20
	// NumMemtables is how many memtables may be held: the one written and
	// the ones waiting to be flushed. Writes wait when all are full, which
	// only a burst faster than the disk can flush meets.
	NumMemtables = 2
	// BlockCacheSize is the cache of decompressed table blocks, the
	// largest part of the live heap once the palace is read (54 MB of 194
	// at 10,000 mined drawers with 64 MB). Its hit ratio was 0.28 in a room
	// of a million drawers, and 64 MB cost nothing measurable against 256
	// (BENCHMARKS.md); a miss costs a block read from the mapped table and
	// decompressed (Zstandard, 4 KB).
	BlockCacheSize = 16 << 20
	// ValueLogFileSize is the size of one value log file, which Badger
	// maps into memory whole; only values of 1 MB and more are kept there
	// (large drawers, checkpoint payloads). Each file is allocated at
	// twice its size before it is mapped (a full disk: badgerdb.go), so
	// it is kept small.
	ValueLogFileSize = 16 << 20
	// BaseTableSize is every table's size, at every level: a compaction
	// builds up to eight or more tables at once, each whole in memory
	// before it is written, and tables that doubled with each level (16-64
	// MB at a million drawers) made its buffers jump by 250-800 MB.
	BaseTableSize = 2 << 20
)

// DropMappedPages drops the pages of Badger's mapped files (tables,
// memtable and value logs) from the process's resident set, for a daemon
// at rest: the files and the page cache keep them, and a read maps a page
// again. Badger drops a file's pages itself once it has written and synced
// them (third_party/ristretto's z.Msync); the pages read since stay until
// this is called. Safe at any time: a mapping is never unmapped or moved
// while its pages are dropped.
func DropMappedPages() error {
	return z.DropResident()
}
