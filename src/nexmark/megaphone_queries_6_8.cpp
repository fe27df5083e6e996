#include "nexmark/built_queries.hpp"
#include "nexmark/megaphone_keyed.hpp"

namespace snailtrail::nexmark::detail {

flow::Stream<Row> build_megaphone_query_6_to_8(int q, const flow::Stream<Event>& ev,
                                               const QueryConfig& qc, const MegaphoneKeyed& keyed) {
  return build_query_6_to_8(q, ev, qc, keyed);
}

}  // namespace snailtrail::nexmark::detail
