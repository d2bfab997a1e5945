/// \file
/// NCCL's protocol, channel and latency tables and its tuner, as the network model uses them.
///
/// Every constant below is NCCL's own, from NVIDIA/nccl at commit b6475625 (2.19/2.20 era)
/// unless a line cites another source:
///  - src/graph/tuning.cc: `baseLat`, `hwLat` (microseconds, per algorithm x protocol, per
///    hardware class NVLink / PCI / NET), `llMaxBws`, `perChMaxRingLL128Bws`,
///    `perChMaxTreeBws`, `perChMaxTreeLL128Bws` (GB/s), the protocol bandwidth factors (LL: 1/4
///    of the channels' bandwidth, 1/3 for single-node all-gather/broadcast; LL128: 0.92 =
///    120/128 payload, 0.7 at one GPU per node; Tree: 0.92; Tree/LL: 1/3.8; Tree/LL128: 7/9 on
///    one node, 120/128 across nodes), the bus->algorithm bandwidth ratios (ring n/nsteps, tree
///    1/2), the latency model (ring: baseLat + (nsteps - nInterSteps) intraLat + nInterSteps
///    interLat, with the network post overhead 1 us x 3 for Simple as the floor of intraLat
///    across nodes; broadcast/reduce: baseLat + nsteps x the tree's hwLat for Simple; tree:
///    baseLat + 2 ((ranks/node - 1) intraLat + log2(nodes) interLat)) and the "plateau" factor
///    1.4 on multi-node Simple ring all-reduce latency (Ampere and newer);
///    `treeCorrectionFactor` (tree bandwidth x 0.5-0.9 for 64 B .. 256 MiB) and the tuner
///    itself, `ncclTopoGetAlgoTime`: time = latency + bytes / algorithm bandwidth, the fastest
///    (algorithm, protocol) wins; LL128 is enabled by default only on NVLink systems whose NIC
///    path is PCIe-local (typeInter <= PXB), never with the socket transport.
///  - src/enqueue.cc (`topoGetAlgoInfo`): fewer channels for small messages: while
///    bytes < channels x threads x threshold, drop one channel; threads = 512 (Simple, LL) or
///    640 (LL128) (NCCL_SIMPLE/LL/LL128_MAX_NTHREADS, src/include/device.h); threshold 64 B
///    (Simple), 8 B (LL128), 8 B x ranks (ring LL) (NCCL_*_THREAD_THRESHOLD, src/include/comm.h).
///    P2P (NCCL 2.28.9, the version tawexec links; NVIDIA/nccl src/enqueue.cc `addP2pToPlan`,
///    `scheduleP2pTasksToPlan`): per peer at most `p2pnChannelsPerPeer`; the smallest count an
///    operation starts from is that count halved while channels x ranks > p2pnChannels; it starts
///    from min(that, bytes / minPart) and doubles while a channel's part exceeds maxPart, where
///    minPart = step / 2 and maxPart = step on a communicator spanning nodes, step / 8 and
///    32 x step on one node; step = the P2P chunk (src/init.cc `computeBuffSizes`:
///    NCCL_P2P_NET_CHUNKSIZE 128 KiB on a multi-node communicator, NCCL_P2P_NVL_CHUNKSIZE 512 KiB
///    on an all-NVLink node, NCCL_P2P_PCI_CHUNKSIZE 128 KiB otherwise). (2.22-2.27 doubled while
///    a channel carried more than 4 chunks; 2.18-2.21 also halved the maximum; not modelled.)
///  - src/graph/paths.cc (`ncclTopoGetNchannels`, `ncclTopoComputeP2pChannels`, 2.28.9):
///    p2pnChannels = pow2Up(min(collective channels, 32)); p2pnChannelsPerPeer = pow2Up of the
///    SMALLEST per-pair count over every pair of the communicator, at most p2pnChannels. Per pair:
///    NVLink peer 2 x (path bandwidth / per-link NVLink bandwidth), other local peer 2, network
///    peer (NCCL_NCHANNELS_PER_NET_PEER unset) max(NICs needed by bandwidth, 2 halved while
///    2 x ranks > 4 x p2pnChannels). So on a communicator that spans nodes every P2P operation,
///    NVLink peers included, runs on at most the network peers' count: 2 channels up to 64 ranks.
///  - src/graph/topo.h: NCCL's per-link NVLink bandwidth, SM80 20.0 GB/s, SM90 20.6 GB/s. A
///    GPU's collective channels on an NVSwitch node: 2 per NVLink link (the ring search finds
///    one channel per link and duplicates them, src/graph/connect.cc), at most 32; a DGX/HGX
///    A100 (12 links) logs "Channel 00/24" (NVIDIA/nccl-tests issue 100), an H100 32.
///
/// The channels' bandwidth. NCCL's kernels move data with SM threads, not copy engines: per
/// NVLink link about 20 GB/s of the nominal 25 (128-byte stores; NVIDIA/nccl-tests issue 149,
/// maintainer, in /work/shared/docs/hardware.md), the figure NCCL's topology also uses
/// (SM80_NVLINK_BW). So one GPU's collective channels on NVLink carry at most
/// links x 20 GB/s (x 20.6 on Hopper), spread over its channels. A P2P channel moves about
/// 9 GB/s (two A100s on 4 NVLink3 links: 72 GB/s sendrecv over 8 channels, NVIDIA/nccl-tests
/// issue 331). Across nodes a channel is not the limit (the NIC is), except with the socket
/// transport (see `SocketTransport`).
///
/// How the simulator uses this: the flow model still shares link capacity (max-min); the tuner
/// picks protocol and channel count per collective from the size (as NCCL does, with the
/// bandwidth of the collective's links in place of NCCL's graph bandwidth), and the chosen
/// protocol's bus bandwidth for that many channels becomes the solver variable's BOUND, the
/// chosen protocol's latency its start-up latency. Bandwidth then ramps with size through the
/// latency, the channel count and the protocol switches LL -> LL128 -> Simple; the tree's
/// correction factor slows mid-size trees as NCCL's own model does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tawpipe::sim::nccl {

/// NCCL_PROTO values.
enum class Proto : std::uint8_t { ll = 0, ll128 = 1, simple = 2 };
inline constexpr int kProtos = 3;
/// "LL", "LL128", "Simple" (NCCL's spelling).
const char* name(Proto p);

/// A set of enabled protocols (NCCL_PROTO="LL,LL128" or "^LL"). Default: all.
struct ProtoSet {
  std::uint8_t bits = 0b111;
  bool has(Proto p) const { return (bits >> static_cast<int>(p) & 1u) != 0; }
};
/// Parses NCCL_PROTO syntax (case-insensitive, comma-separated, leading '^' = all but).
/// Returns false on an unknown name or an empty set.
bool parse_protos(std::string_view text, ProtoSet* out);

/// Collective functions of NCCL's tables.
enum class Coll : std::uint8_t { broadcast, reduce, all_gather, reduce_scatter, all_reduce };
enum class Algo : std::uint8_t { tree = 0, ring = 1 };
/// Hardware classes of `hwLat`.
enum class Hw : std::uint8_t { nvlink = 0, pci = 1, net = 2 };
/// GPU generation index of NCCL's per-architecture tables.
enum class Arch : std::uint8_t { volta = 0, ampere = 1, hopper = 2 };

/// Guesses the architecture from a device-kind name ("h100", "h200", "h800", "gh200" ->
/// Hopper, "v100" -> Volta, otherwise Ampere).
Arch arch_of_device(std::string_view device_kind_name);
/// NCCL's per-link NVLink bandwidth (topo.h): 20.0 GB/s, 20.6 on Hopper; bytes/s.
double nvlink_link_bytes_per_second(Arch arch);
/// Collective channels of one GPU on an NVLink fabric with `links` links: min(32, 2 x links).
int nvlink_channels(int links);

/// One communicator as the tuner sees it.
struct CommShape {
  Coll coll = Coll::all_reduce;
  int ranks = 2;
  int nodes = 1;
  Hw intra = Hw::nvlink;  ///< fabric inside a node
  Arch arch = Arch::ampere;
  int channels = 1;  ///< the communicator's channel count (NCCL's nChannels)
  /// Bus bandwidth (bytes/s) of all channels together before protocol factors: the rate the
  /// collective's links allow alone on the network, capped by channels x per-channel rate.
  double ring_bus_bytes_per_second = 0.0;
  double tree_bus_bytes_per_second = 0.0;  ///< same for the tree (all-reduce across nodes)
  bool ll128_enabled = true;               ///< NCCL's default LL128 rule (see the file comment)
  /// Extra latency of one inter-node step beyond NCCL's NET hwLat (e.g. TCP), microseconds.
  double extra_inter_latency_us = 0.0;
};

/// What the tuner chose for one message.
struct Tuned {
  Algo algo = Algo::ring;
  Proto proto = Proto::simple;
  int channels = 1;
  double latency_us = 0.0;
  /// Bus bandwidth of the chosen protocol at `channels`, bytes/s (before the bus->algorithm
  /// ratio): the bound of the collective's solver variable, per channel group.
  double bus_bytes_per_second = 0.0;
  double time_us = 0.0;  ///< NCCL's predicted time: latency + bytes / algorithm bandwidth
};

/// Limits and forcing from the user (NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS, NCCL_ALGO).
struct TunerOverrides {
  ProtoSet protos;
  int min_channels = 0;  ///< 0 = NCCL's choice
  int max_channels = 0;  ///< 0 = NCCL's choice
  bool allow_ring = true;
  bool allow_tree = true;
};

/// NCCL's latency (us) of `algo` with `proto` on `shape` (tuning.cc).
double latency_us(const CommShape& shape, Algo algo, Proto proto);
/// NCCL's bus bandwidth (bytes/s) of `algo`/`proto` with `channels` of the communicator's
/// channels in use (protocol factors and per-channel caps of tuning.cc applied).
double bus_bandwidth(const CommShape& shape, Algo algo, Proto proto, int channels);
/// Bus -> algorithm bandwidth ratio (ring: ranks / nsteps; tree: 1/2).
double algo_ratio(const CommShape& shape, Algo algo);
/// Channels NCCL uses for `bytes` (enqueue.cc), starting from `channels`.
int channels_for_size(double bytes, int channels, Algo algo, Proto proto, int ranks);
/// The tuner: fastest (algorithm, protocol) for `bytes`, with its channel count. Tree only for
/// an all-reduce across nodes (`tree_bus_bytes_per_second` > 0).
Tuned tune(const CommShape& shape, double bytes, const TunerOverrides& overrides);

/// `p2pnChannelsPerPeer` of a communicator (see the file comment): `p2p_channels` =
/// p2pnChannels (a power of two), `min_pair_channels` = the smallest per-pair count.
int p2p_channels_per_peer(int p2p_channels, int min_pair_channels);
/// Per-pair channel count to a network peer with NCCL_NCHANNELS_PER_NET_PEER unset (2.28.9):
/// max(`nics_by_bandwidth`, 2 halved while 2 x ranks > 4 x p2pnChannels).
int net_peer_channels(int ranks, int p2p_channels, int nics_by_bandwidth);
/// P2P channels NCCL uses for one send of `bytes` on a communicator of `ranks` ranks over
/// `nodes` nodes, with `per_peer` = p2pnChannelsPerPeer and `p2p_channels` = p2pnChannels (both
/// powers of two) and the communicator's P2P chunk `chunk_bytes`. See the file comment.
int p2p_channels_for_size(double bytes, int ranks, int nodes, int per_peer, int p2p_channels,
                          double chunk_bytes);
/// The communicator's P2P chunk (src/init.cc `computeBuffSizes`), bytes.
double p2p_chunk_bytes(int nodes, bool all_nvlink);
/// Rounds up to a power of two.
int pow2_up(int v);

/// Per-channel rate of a P2P channel on NVLink (nccl-tests issue 331), bytes/s.
inline constexpr double kP2pChannelBytesPerSecond = 9e9;
/// Latency of a P2P operation beyond its route's latency: one Simple step, NCCL's ring Simple
/// hwLat of the hardware class (tuning.cc has no P2P entry; a send is one pipelined step),
/// microseconds.
double p2p_latency_us(Hw hw);

/// NCCL's socket transport (src/transport/net_socket.cc) for Ethernet without RDMA: every
/// connection (one per channel and peer) is served by NCCL_SOCKET_NTHREADS helper threads with
/// NCCL_NSOCKS_PERTHREAD sockets each (threads x sockets <= 64; defaults 1 x 1 outside the
/// cloud-vendor auto-detection); the slowest socket sets the pace (NVIDIA/nccl issue 438).
/// Achievable rate per connection: one TCP stream's copy rate times its sockets. Figures:
/// NVIDIA/nccl issue 450 (100 GbE: 4-6 GB/s bus bandwidth with NCCL's default 2 channels,
/// i.e. ~2.5 GB/s per connection) and NVIDIA/nccl-tests issue 83 (25 GbE: best 1.7 GB/s of
/// 3.125, 54 % of line rate, with 2 sockets x 4 threads); see /work/shared/docs/hardware.md.
struct SocketTransport {
  int threads = 1;           ///< NCCL_SOCKET_NTHREADS
  int socks_per_thread = 1;  ///< NCCL_NSOCKS_PERTHREAD
  /// One TCP stream's achievable rate, bytes/s (issue 450: ~2.5 GB/s per default connection).
  /// The line-rate share the socket path reaches at best (issue 83: 54 %) is the topology's
  /// NIC efficiency, a link constraint shared by all connections.
  double per_socket_bytes_per_second = 2.5e9;
  /// Rate one connection reaches: sockets x per-socket rate.
  double connection_bytes_per_second() const;
};

}  // namespace tawpipe::sim::nccl
