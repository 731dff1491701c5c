package badgerdb

// Schema is the declarative layout of the key space. Its content hash is
// tracked by the migration runner: changing it is a schema change.
const Schema = `badger key space v4
w/<wing> wn/<name> r/<room> rn/<wing>/<name> rw/<wing>/<room>
d/<drawer> dn/<room>/<name> dt/<room>/<created>/<drawer>
xh/<scope>/<hash> xf/<scope>/<fingerprint> xb/<scope>/<band> (posting lists of id+length) dd/<drawer> ds/<drawer> (MinHash minimums, normalised text)
l/<link> ld/<drawer>/<link>
log/<seq>
meta/<key>
`
