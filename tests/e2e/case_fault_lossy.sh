#!/usr/bin/env bash
# Issue 11 fault: 20 % packet loss and 200 ms delay on net1 (DECISIONS 28: no netem here).
# 3 pods; in every pod nftables drops 20 % of the packets arriving on net1 (numgen random);
# in each member pod an nft "redirect" sends its TCP connections to the coordinator's net1
# rendezvous port through a relay in that pod (python3, SO_ORIGINAL_DST) that holds every chunk
# 200 ms in each direction and the connect 200 ms. eth0 closed but DNS + 29410.
# First a clean run (no loss, no relay) for the time, then the faulty one.
# Asserts: the faulty run completes (every pod exits 0 within --timeout 40, ranks, NNODES=3,
# MASTER_ADDR=<coordinator's net1>:29500) and the relays carried the secondary check (at least
# one relayed connection per member). Prints clean and faulty times and the loss counters.
set -uo pipefail
. "$(dirname "$0")/cluster.sh"
cluster_need_root
gx_need_gxboot
cluster_create 3 || fail "cluster_create"
T=$(cluster_token)
for i in 0 1 2; do cluster_cut_eth0 "$i"; done
run_job() { # run_job TAG : one rendezvous of the 3 pods, coordinator last; DT = its ms
  local tag=$1 i t0
  t0=$(date +%s%N)
  for i in 2 1 0; do
    rm -rf "$GX_DIR/out$i"
    gx_start "$i" --peers 'job-worker-{0..2}' --token-file "$T" --timeout 40 -- "${GX_REPORT[@]}"
  done
  gx_wait_all 60 0 1 2
  DT=$((($(date +%s%N) - t0) / 1000000))
  for i in 0 1 2; do cp "$GX_DIR/pod$i.log" "$GX_DIR/pod$i.$tag.log"; done
}
run_job clean
clean=$DT
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i"; done

cat >"$GX_DIR/relay.py" <<'PYEOF'
# relay.py PORT DELAY_S: accept redirected connections on 127.0.0.1:PORT, connect to the
# original destination (SO_ORIGINAL_DST) with SO_MARK 0x77 (not redirected again), and pass
# bytes both ways, each chunk held DELAY_S; prints one line per connection.
import asyncio, socket, struct, sys
PORT, DELAY = int(sys.argv[1]), float(sys.argv[2])
async def pump(r, w):
    loop = asyncio.get_running_loop()
    q = asyncio.Queue()
    async def writer():
        while True:
            t, data = await q.get()
            await asyncio.sleep(max(0, t - loop.time()))
            if data is None:
                break
            w.write(data)
            await w.drain()
        try:
            w.write_eof()
        except OSError:
            pass
    task = asyncio.create_task(writer())
    try:
        while True:
            data = await r.read(65536)
            q.put_nowait((loop.time() + DELAY, data or None))
            if not data:
                break
    except OSError:
        q.put_nowait((loop.time(), None))
    try:
        await task
    except OSError:
        pass
async def handle(r, w):
    s = w.get_extra_info("socket")
    raw = s.getsockopt(socket.SOL_IP, 80, 16)  # SO_ORIGINAL_DST
    port, ip = struct.unpack("!2xH4s8x", raw)
    dst = socket.inet_ntoa(ip)
    await asyncio.sleep(DELAY)
    up = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    up.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, 0x77)
    up.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(up, (dst, port))
    except OSError as e:
        print("relay: connect %s:%d: %s" % (dst, port, e), flush=True)
        w.close()
        return
    ur, uw = await asyncio.open_connection(sock=up)
    print("relay: %s -> %s:%d" % (w.get_extra_info("peername")[0], dst, port), flush=True)
    await asyncio.gather(pump(r, uw), pump(ur, w))
    uw.close()
    w.close()
async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    print("relay: listening", flush=True)
    async with srv:
        await srv.serve_forever()
asyncio.run(main())
PYEOF
co_net1=$(pod_net1 0)
for i in 1 2; do
  ip netns exec "$(pod_ns "$i")" nft -f - <<NFT || fail "nft redirect in job-worker-$i"
table ip gxrelay {
  chain out {
    type nat hook output priority -100; policy accept;
    oifname "net1" ip daddr $co_net1 tcp dport 29410 meta mark != 0x77 redirect to :29499
  }
}
NFT
  pod_bg "$i" "$GX_DIR/relay$i.log" "$PY" -u "$GX_DIR/relay.py" 29499 0.2
  gx_wait_until 5 grep -q listening "$GX_DIR/relay$i.log" || fail "relay in job-worker-$i did not start" "$GX_DIR/relay$i.log"
done
for i in 0 1 2; do cluster_loss "$i" 20 net1; done
run_job faulty
faulty=$DT
gx_expect_rc 0 0 1 2
for i in 0 1 2; do gx_expect_report "$i"; done
for i in 1 2; do
  grep -q '^relay: .* -> ' "$GX_DIR/relay$i.log" || fail "nothing went through the relay of job-worker-$i" "$GX_DIR/relay$i.log"
done
drops=""
for i in 0 1 2; do
  drops+=" $(ip netns exec "$(pod_ns "$i")" nft list table inet gxloss | awk '/packets/ { for (k = 1; k <= NF; k++) if ($k == "packets") print $(k + 1) }')"
done
echo "relayed connections: $(cat "$GX_DIR"/relay[12].log | grep -c ' -> ')"
echo "net1 packets dropped by the 20 % rule (pods 0 1 2):$drops"
echo "clean run: $clean ms; with 20 % loss + 200 ms delay each way on net1: $faulty ms; all exit 0: OK"
