// The job table: one line per job.
#include <vector>

#include "flow/jobs/jobs.hpp"

namespace snailtrail::flow {

static std::vector<JobSpec>& table() {
  static std::vector<JobSpec> t = {jobs::keycount_job(), jobs::wordcount_job()};
  return t;
}

void register_job(JobSpec job) {
  if (!find_job(job.name)) table().push_back(std::move(job));
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

}  // namespace snailtrail::flow
