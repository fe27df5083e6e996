#include "nexmark/built_queries.hpp"
#include "nexmark/megaphone_keyed.hpp"

namespace snailtrail::nexmark::detail {

flow::Stream<Row> build_megaphone_query_6_to_8(int q, const flow::Stream<Event>& ev,
                                               const QueryConfig& qc, const MegaphoneKeyed& keyed) {
  switch (q) {
    case 6:
      return q6(ev, qc, keyed);
    case 7:
      return q7(ev, qc, keyed);
    default:
      return q8(ev, qc, keyed);
  }
}

}  // namespace snailtrail::nexmark::detail
