// The header presets (log_format.hpp): the formats of the public loghub datasets (the
// header strings of logpai's benchmark, fields renamed where a name has a meaning here:
// Zookeeper's first bracketed field is its thread), and the common Java layouts. Order
// matters: detection breaks ties in favour of the earlier, more specific preset.
#include "logs/log_format.hpp"

namespace snailtrail::logs {

const std::vector<FormatPreset>& format_presets() {
  static const std::vector<FormatPreset> presets = {
      {"log4j-thread", R"(<Date> <Time> <Level> \[<Thread>\] <Component>: <Content>)",
       "2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: "
       "Created MRAppMaster"},
      {"zookeeper", R"(<Date> <Time> - <Level> \[<Thread>:<Component>@<Line>\] - <Content>)",
       "2015-07-29 17:41:44,747 - INFO  [QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:"
       "FastLeaderElection@774] - Notification time out: 3200"},
      {"hdfs", "<Date> <Time> <Pid> <Level> <Component>: <Content>",
       "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block "
       "blk_38865049064139660 terminating"},
      {"openstack",
       R"(<Logrecord> <Date> <Time> <Pid> <Level> <Component> \[<Address>\] <Content>)",
       "nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO "
       "nova.osapi_compute.wsgi.server [req-38101a0b-2096-447d-96ea-a692162415ae "
       "113d3a99c3da401fbd62cc2caa5b96d2 54fadb412c4e40cdbaed9335e4c35a9e - - -] 10.11.10.1 "
       "\"GET /v2/54fadb412c4e40cdbaed9335e4c35a9e/servers/detail HTTP/1.1\" status: 200"},
      {"android", "<Date> <Time> <Pid> <Tid> <Level> <Component>: <Content>",
       "03-17 16:13:38.811  1702  2395 D WindowManager: printFreezingDisplayLogsopening app "
       "wtoken = AppWindowToken{9f4ef63 token=Token{a64f992 ActivityRecord{de9231d u0 "
       "com.tencent.qt.qtl/.activity.info.NewsDetailXmlActivity t761}}}"},
      {"windows-cbs", "<Date> <Time>, <Level> <Component> <Content>",
       "2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505 "
       "with Core: C:\\Windows\\winsxs\\amd64_microsoft-windows-servicingstack\\cbscore.dll"},
      {"log4j", "<Date> <Time> <Level> <Component>: <Content>",
       "17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers"},
      {"iso8601", R"(<Timestamp> <Level> \[<Thread>\] <Component> - <Content>)",
       "2024-03-01T12:00:00.123Z INFO [http-nio-8080-exec-1] c.e.OrderService - Order 42 placed"},
      {"iso8601-plain", "<Timestamp> <Level> <Content>",
       "2024-03-01T12:00:00.123+01:00 WARN cache miss for key user:42"},
      {"syslog", "<Month> <Day> <Time> <Host> <Process>: <Content>",
       "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0"},
      {"thunderbird",
       "<Label> <Timestamp> <Date> <Host> <Month> <Day> <Time> <Location> <Process>: <Content>",
       "- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228 crond(pam_unix)[2915]: "
       "session closed for user root"},
      {"bgl",
       "<Label> <Timestamp> <Date> <Node> <Time> <NodeRepeat> <Type> <Component> <Level> "
       "<Content>",
       "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 "
       "R02-M1-N0-C:J12-U11 RAS KERNEL INFO instruction cache parity error corrected"},
      {"hpc", "<LogId> <Node> <Component> <State> <Time> <Flag> <Content>",
       "134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: "
       "Component "
       "\\042SCSI-WWID:01000010:6005-08b4-0001-00c6-0006-3000-003d-0000\\042 is in the "
       "unavailable state (HWID=1973)"},
      {"apache", R"(\[<Time>\] \[<Level>\] <Content>)",
       "[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok "
       "/etc/httpd/conf/workers2.properties"},
      {"proxifier", R"(\[<Time>\] <Program> - <Content>)",
       "[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy "
       "proxy.cse.cuhk.edu.hk:5070 HTTPS"},
      {"healthapp", R"(<Time>\|<Component>\|<Pid>\|<Content>)",
       "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579"},
  };
  return presets;
}

}  // namespace snailtrail::logs
