#include "nexmark/built_queries.hpp"
#include "nexmark/keyed.hpp"

namespace snailtrail::nexmark {

flow::Stream<Row> build_native_query(int q, const flow::Stream<Event>& ev, const QueryConfig& qc) {
  return build_query(q, ev, qc, NativeKeyed{});
}

}  // namespace snailtrail::nexmark
