// NCCL's tables and tuner (see nccl_tuning.h for the derivation and the citations).
#include "sim/network/nccl_tuning.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace tawpipe::sim::nccl {
namespace {

// tuning.cc, baseLat [algorithm][protocol] in us: Tree {LL, LL128, Simple}, Ring {...}.
constexpr double kBaseLat[2][kProtos] = {{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}};
// tuning.cc, hwLat [hw][algorithm][protocol] in us.
constexpr double kHwLat[3][2][kProtos] = {
    {{0.6, 1.25, 28.0}, {0.6, 1.9, 3.4}},  // NVLink: Tree, Ring
    {{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}},   // PCI
    {{5.0, 8.5, 28.0}, {2.7, 4.0, 14.0}},  // NET
};
// tuning.cc, GB/s, [arch][nodes index: 1, 2, >2 nodes].
constexpr double kLlMaxBw[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
constexpr double kPerChMaxRingLl128[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double kPerChMaxTreeLl128[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
constexpr double kPerChMaxTree[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
// tuning.cc, treeCorrectionFactor [protocol][log2(bytes / 64)], 64 B .. 256 MiB.
constexpr double kTreeCorrection[kProtos][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// device.h / comm.h: threads per channel and bytes per thread before adding a channel.
constexpr int kMaxThreads[kProtos] = {512, 640, 512};
constexpr double kThreadThreshold[kProtos] = {8.0, 8.0, 64.0};
constexpr int kMaxChannels = 32;  // MAXCHANNELS
// tuning.cc getNetOverhead: 1 us (x86 Intel and default), x 3 for Simple.
constexpr double kNetOverheadUs = 1.0;

int idx(Algo a) {
  return static_cast<int>(a);
}
int idx(Proto p) {
  return static_cast<int>(p);
}
int node_index(int nodes) {
  return nodes <= 2 ? nodes - 1 : 2;
}
int log2i(long long v) {
  int r = 0;
  while (v > 1) {
    v >>= 1;
    ++r;
  }
  return r;
}

}  // namespace

const char* name(Proto p) {
  switch (p) {
    case Proto::ll:
      return "LL";
    case Proto::ll128:
      return "LL128";
    case Proto::simple:
      return "Simple";
  }
  return "?";
}

bool parse_protos(std::string_view text, ProtoSet* out) {
  bool invert = false;
  if (!text.empty() && text.front() == '^') {
    invert = true;
    text.remove_prefix(1);
  }
  std::uint8_t bits = 0;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view token = text.substr(0, comma);
    bool found = false;
    for (int p = 0; p < kProtos; ++p) {
      const std::string_view n = name(static_cast<Proto>(p));
      if (n.size() == token.size() &&
          std::equal(n.begin(), n.end(), token.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) ==
                   std::tolower(static_cast<unsigned char>(b));
          })) {
        bits = static_cast<std::uint8_t>(bits | (1u << p));
        found = true;
      }
    }
    if (!found) return false;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (invert) bits = static_cast<std::uint8_t>(~bits & 0b111);
  if (bits == 0) return false;
  out->bits = bits;
  return true;
}

Arch arch_of_device(std::string_view n) {
  const auto has = [&](std::string_view s) { return n.find(s) != std::string_view::npos; };
  if (has("h100") || has("h200") || has("h800") || has("gh200") || has("H100") || has("H200"))
    return Arch::hopper;
  if (has("v100") || has("V100")) return Arch::volta;
  return Arch::ampere;
}

double nvlink_link_bytes_per_second(Arch arch) {
  return arch == Arch::hopper ? 20.6e9 : 20.0e9;
}

int nvlink_channels(int links) {
  return std::clamp(2 * links, 2, kMaxChannels);
}

double algo_ratio(const CommShape& s, Algo algo) {
  if (algo == Algo::tree) return 0.5;
  const int nsteps = s.coll == Coll::all_reduce ? 2 * (s.ranks - 1)
                     : (s.coll == Coll::all_gather || s.coll == Coll::reduce_scatter) ? s.ranks - 1
                                                                                      : s.ranks;
  return static_cast<double>(s.ranks) / static_cast<double>(nsteps);
}

double bus_bandwidth(const CommShape& s, Algo algo, Proto proto, int channels) {
  const double full =
      algo == Algo::tree ? s.tree_bus_bytes_per_second : s.ring_bus_bytes_per_second;
  // Channels in use carry their share of the communicator's bandwidth.
  const double nc = static_cast<double>(channels);
  double bw = full * nc / static_cast<double>(std::max(1, s.channels));
  const int a = static_cast<int>(s.arch);
  const int n = node_index(s.nodes);
  const double ppn = static_cast<double>(s.ranks) / static_cast<double>(s.nodes);
  const double ll_max = kLlMaxBw[a][n] * 1e9;
  if (algo == Algo::ring) {
    if (proto == Proto::ll) {
      const bool quarter = s.nodes > 1 || s.coll == Coll::all_reduce || s.coll == Coll::reduce;
      bw = std::min(ll_max, bw * (quarter ? 1.0 / 4.0 : 1.0 / 3.0));
    } else if (proto == Proto::ll128) {
      bw = std::min(bw * (ppn < 2 ? 0.7 : 0.92), nc * kPerChMaxRingLl128[a][n] * 1e9);
    }
    return bw;
  }
  bw = std::min(bw * 0.92, nc * kPerChMaxTree[a][n] * 1e9);
  if (proto == Proto::ll) bw = std::min(bw / 3.8, ll_max);
  if (proto == Proto::ll128)
    bw = std::min(bw * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                  nc * kPerChMaxTreeLl128[a][n] * 1e9);
  return bw;
}

double latency_us(const CommShape& s, Algo algo, Proto proto) {
  const int a = idx(algo);
  const int p = idx(proto);
  double lat = kBaseLat[a][p];
  const Hw hw = s.nodes == 1 ? s.intra : Hw::net;
  double intra = kHwLat[static_cast<int>(s.intra)][a][p];
  const double inter = kHwLat[static_cast<int>(Hw::net)][a][p] + s.extra_inter_latency_us;
  if (algo == Algo::ring) {
    const int nsteps = s.coll == Coll::all_reduce ? 2 * (s.ranks - 1)
                       : (s.coll == Coll::all_gather || s.coll == Coll::reduce_scatter)
                           ? s.ranks - 1
                           : s.ranks;
    if (s.coll == Coll::broadcast || s.coll == Coll::reduce) {
      // Rings are not the same in both directions here (sameChannels = 0 on NVSwitch/rails):
      // nsteps x the per-step latency, the tree's for Simple ("chunk latency").
      double step = kHwLat[static_cast<int>(hw)][a][p];
      if (proto == Proto::simple) step = kHwLat[static_cast<int>(hw)][idx(Algo::tree)][p];
      return lat + nsteps * step + (s.nodes - 1) * s.extra_inter_latency_us;
    }
    const int inter_steps = s.coll == Coll::all_reduce ? (s.nodes > 1 ? 2 * s.nodes : 0)
                            : (s.coll == Coll::all_gather || s.coll == Coll::reduce_scatter)
                                ? s.nodes - 1
                                : s.nodes;
    if (s.nodes > 1) {
      const double overhead = kNetOverheadUs * (proto == Proto::simple ? 3.0 : 1.0);
      intra = std::max(intra, overhead);
    }
    lat += (nsteps - inter_steps) * intra + inter_steps * inter;
    if (proto == Proto::simple && s.nodes > 1 && s.coll == Coll::all_reduce &&
        s.arch != Arch::volta)
      lat *= 1.4;  // "plateau effect of ring" (ncclTopoGetAlgoTime)
    return lat;
  }
  return lat + 2.0 * ((s.ranks / s.nodes - 1) * intra + log2i(s.nodes) * inter);
}

int channels_for_size(double bytes, int channels, Algo algo, Proto proto, int ranks) {
  int nc = std::max(1, channels);
  double threshold = kThreadThreshold[idx(proto)];
  if (algo == Algo::ring && proto == Proto::ll) threshold *= ranks;
  const double nt = kMaxThreads[idx(proto)];
  while (nc >= 2 && bytes < nc * nt * threshold)
    --nc;
  return nc;
}

Tuned tune(const CommShape& s, double bytes, const TunerOverrides& o) {
  Tuned best;
  best.time_us = std::numeric_limits<double>::infinity();
  const int max_nc = o.max_channels > 0 ? std::min(o.max_channels, s.channels) : s.channels;
  for (const Algo algo : {Algo::tree, Algo::ring}) {
    if (algo == Algo::tree &&
        (!o.allow_tree || s.coll != Coll::all_reduce || !(s.tree_bus_bytes_per_second > 0.0)))
      continue;
    if (algo == Algo::ring && !o.allow_ring) continue;
    for (int p = 0; p < kProtos; ++p) {
      const auto proto = static_cast<Proto>(p);
      if (!o.protos.has(proto)) continue;
      if (proto == Proto::ll128 && !s.ll128_enabled && o.protos.bits == 0b111) continue;
      int nc = channels_for_size(bytes, max_nc, algo, proto, s.ranks);
      if (o.min_channels > 0) nc = std::max(nc, std::min(o.min_channels, s.channels));
      double bw = bus_bandwidth(s, algo, proto, nc) * algo_ratio(s, algo);
      if (algo == Algo::tree) {
        const int log_size = log2i(static_cast<long long>(bytes) >> 6);
        if (log_size < 23) bw *= kTreeCorrection[p][log_size];
      }
      if (!(bw > 0.0)) continue;
      const double lat = latency_us(s, algo, proto);
      const double t = lat + bytes / bw * 1e6;
      if (t < best.time_us) {
        best.algo = algo;
        best.proto = proto;
        best.channels = nc;
        best.latency_us = lat;
        best.bus_bytes_per_second = bus_bandwidth(s, algo, proto, nc);
        best.time_us = t;
      }
    }
  }
  if (best.time_us == std::numeric_limits<double>::infinity() && !o.allow_ring) {
    TunerOverrides ring = o;  // the forced tree does not apply here: NCCL falls back to the ring
    ring.allow_ring = true;
    return tune(s, bytes, ring);
  }
  return best;
}

int pow2_up(int v) {
  int r = 1;
  while (r < v)
    r <<= 1;
  return r;
}

int p2p_channels_per_peer(int p2p_channels, int min_pair_channels) {
  return std::min(pow2_up(std::max(1, std::min(p2p_channels, min_pair_channels))), p2p_channels);
}

int net_peer_channels(int ranks, int p2p_channels, int nics_by_bandwidth) {
  int nc = 2;
  while (nc * ranks > p2p_channels * 4 && nc > 1)
    nc /= 2;
  return std::max(nics_by_bandwidth, nc);
}

double p2p_chunk_bytes(int nodes, bool all_nvlink) {
  if (nodes > 1) return 128.0 * 1024;  // NCCL_P2P_NET_CHUNKSIZE
  return all_nvlink ? 512.0 * 1024     // NCCL_P2P_NVL_CHUNKSIZE
                    : 128.0 * 1024;    // NCCL_P2P_PCI_CHUNKSIZE
}

int p2p_channels_for_size(double bytes, int ranks, int nodes, int per_peer, int p2p_channels,
                          double chunk_bytes) {
  const int max_nc = per_peer;
  int min_nc = per_peer;
  while (min_nc * ranks > p2p_channels && min_nc > 1)
    min_nc /= 2;
  const double min_part = nodes > 1 ? chunk_bytes / 2 : chunk_bytes / 8;
  const double max_part = nodes > 1 ? chunk_bytes : 32.0 * chunk_bytes;
  int nc = std::min(min_nc, std::max(1, static_cast<int>(std::ceil(bytes / min_part))));
  double part = std::max(min_part, std::ceil(bytes / nc));
  while (part > max_part && nc <= max_nc / 2) {
    nc *= 2;
    part = std::ceil(bytes / nc);
  }
  return nc;
}

double p2p_latency_us(Hw hw) {
  return kHwLat[static_cast<int>(hw)][idx(Algo::ring)][idx(Proto::simple)];
}

double SocketTransport::connection_bytes_per_second() const {
  const double sockets = static_cast<double>(std::max(1, threads) * std::max(1, socks_per_thread));
  return sockets * per_socket_bytes_per_second;
}

}  // namespace tawpipe::sim::nccl
