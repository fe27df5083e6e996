#include "nexmark/built_queries.hpp"
#include "nexmark/megaphone_keyed.hpp"

namespace snailtrail::nexmark {

flow::Stream<Row> build_megaphone_query(int q, const flow::Stream<Event>& ev, const QueryConfig& qc,
                                        const MegaphoneKeyed& keyed) {
  if (q < 3) return build_native_query(q, ev, qc);
  if (q > 5) return detail::build_megaphone_query_6_to_8(q, ev, qc, keyed);
  return build_query_3_to_5(q, ev, qc, keyed);
}

}  // namespace snailtrail::nexmark
