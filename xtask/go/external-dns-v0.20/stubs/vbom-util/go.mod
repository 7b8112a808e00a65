// Module-graph-only stand-in for vbom.ml/util (no package of it is built): the Go module proxy here does not
// serve it.
module vbom.ml/util

go 1.12
