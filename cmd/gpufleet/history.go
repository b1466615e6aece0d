// SPDX-License-Identifier: Apache-2.0

package main

// defaultHistoryPath is where refreshes record how prices moved, next to
// the catalog, for a team to commit and backtest against.
const defaultHistoryPath = ".gpufleet/price-history.json"
