#include "nexmark/built_queries.hpp"
#include "nexmark/megaphone_keyed.hpp"

namespace snailtrail::nexmark {

flow::Stream<Row> build_megaphone_query(int q, const flow::Stream<Event>& ev, const QueryConfig& qc,
                                        const MegaphoneKeyed& keyed) {
  switch (q) {
    case 3:
      return q3(ev, qc, keyed);
    case 4:
      return q4(ev, qc, keyed);
    case 5:
      return q5(ev, qc, keyed);
    default:
      return q < 3 ? build_native_query(q, ev, qc)
                   : detail::build_megaphone_query_6_to_8(q, ev, qc, keyed);
  }
}

}  // namespace snailtrail::nexmark
