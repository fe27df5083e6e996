// The job table: one line per job; later stages add theirs with register_job.
#include <deque>
#include <vector>

#include "flow/jobs/jobs.hpp"

namespace snailtrail::flow {

// A deque: find_job's pointers stay valid while jobs are added.
static std::deque<JobSpec>& table() {
  static std::deque<JobSpec> t = {jobs::keycount_job(), jobs::wordcount_job()};
  return t;
}

const JobSpec* find_job(const std::string& name) {
  for (const JobSpec& j : table())
    if (j.name == name) return &j;
  return nullptr;
}

std::vector<std::string> job_names() {
  std::vector<std::string> out;
  for (const JobSpec& j : table()) out.push_back(j.name);
  return out;
}

void register_job(JobSpec job) {
  for (JobSpec& j : table())
    if (j.name == job.name) {
      j = std::move(job);
      return;
    }
  table().push_back(std::move(job));
}

}  // namespace snailtrail::flow
