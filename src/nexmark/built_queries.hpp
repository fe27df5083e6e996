// Queries 0-8 built for both keyed-state builders, each in its own sources: the jobs and
// the tests call these instead of instantiating build_query (queries.hpp) themselves. One
// instantiation of all queries on Megaphone's operators is minutes of compiling under the
// sanitizers; built once, in two halves that compile in parallel (docs/ARCHITECTURE.md
// "CI time").
#pragma once

#include "nexmark/queries.hpp"

namespace snailtrail::nexmark {

struct MegaphoneKeyed;

// build_query(q, ev, qc, NativeKeyed{}).
flow::Stream<Row> build_native_query(int q, const flow::Stream<Event>& ev, const QueryConfig& qc);

// build_query(q, ev, qc, keyed): queries 3-8 keep their keyed state in Megaphone's bins;
// the stateless 0-2 are the native ones.
flow::Stream<Row> build_megaphone_query(int q, const flow::Stream<Event>& ev, const QueryConfig& qc,
                                        const MegaphoneKeyed& keyed);

namespace detail {
// Queries 6-8 of build_megaphone_query (megaphone_queries_6_8.cpp).
flow::Stream<Row> build_megaphone_query_6_to_8(int q, const flow::Stream<Event>& ev,
                                               const QueryConfig& qc, const MegaphoneKeyed& keyed);
}  // namespace detail

}  // namespace snailtrail::nexmark
