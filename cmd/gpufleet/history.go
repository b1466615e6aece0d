package main

import (
	"fmt"
	"io"

	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

// defaultHistoryPath is where refreshes record how prices moved, next to
// the catalog, for a team to commit and backtest against.
const defaultHistoryPath = ".gpufleet/price-history.json"

// appendHistory records a catalog's prices in a history file, which is
// rewritten only when some price changed.
func appendHistory(w io.Writer, name string, cat *catalog.Catalog) error {
	h, err := history.Load(name)
	if err != nil {
		return err
	}
	changed := h.Record(cat, cat.FetchedAt)
	if changed == 0 {
		fmt.Fprintf(w, "%s: no price changed\n", name)
		return nil
	}
	if err := h.Save(name); err != nil {
		return err
	}
	fmt.Fprintf(w, "Appended %d changed prices to %s\n", changed, name)
	return nil
}
