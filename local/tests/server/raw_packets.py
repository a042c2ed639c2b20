# Tries every way from a sandbox to the host's loopback listeners whose
# ports are the arguments (TCP v4, TCP v6, UDP v4, UDP v6), and prints what
# each attempt got as JSON. Run as the sandbox's root where it has one.
#
# The raw attacks forge packets addressed to 127.0.0.1 and ::1 and write
# them out of eth0, where slirp4netns forwards whatever it reads to the
# destination as a socket of its own on the host: one SYN is enough for it
# to connect to a host listener. They only get that far if the sandbox may
# open raw or packet sockets.
import json
import os
import socket
import struct
import sys

tcp4, tcp6, udp4, udp6 = (int(a) for a in sys.argv[1:5])
out = {}

with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("CapBnd:") or line.startswith("CapEff:"):
            key, value = line.split()
            out[key.rstrip(":")] = value


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def tcp_syn(pseudo_prefix, port):
    header = struct.pack("!HHIIBBHHH", 40000, port, 1, 0, 5 << 4, 0x02, 65535, 0, 0)
    pseudo = pseudo_prefix + header
    return header[:16] + struct.pack("!H", checksum(pseudo)) + header[18:]


def udp(pseudo_prefix, port, payload=b"x"):
    header = struct.pack("!HHHH", 40001, port, 8 + len(payload), 0)
    total = checksum(pseudo_prefix + header + payload)
    return header[:6] + struct.pack("!H", total or 0xFFFF) + payload


def ipv4(proto, dst, payload):
    src = socket.inet_aton("10.0.2.100")
    dst = socket.inet_aton(dst)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0x4000, 64, proto, 0, src, dst)
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    return header + payload


def pseudo4(proto, length, dst):
    return socket.inet_aton("10.0.2.100") + socket.inet_aton(dst) + struct.pack("!BBH", 0, proto, length)


def ipv6(proto, dst, payload):
    src = socket.inet_pton(socket.AF_INET6, "fd00::100")
    dst = socket.inet_pton(socket.AF_INET6, dst)
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), proto, 64, src, dst) + payload


def pseudo6(proto, length, dst):
    src = socket.inet_pton(socket.AF_INET6, "fd00::100")
    return src + socket.inet_pton(socket.AF_INET6, dst) + struct.pack("!IxxxB", length, proto)


def forged():
    """Every forged packet: (name, ethertype, IP packet)."""
    yield "tcp4", 0x0800, ipv4(6, "127.0.0.1", tcp_syn(pseudo4(6, 20, "127.0.0.1"), tcp4))
    yield "udp4", 0x0800, ipv4(17, "127.0.0.1", udp(pseudo4(17, 9, "127.0.0.1"), udp4))
    yield "tcp6", 0x86DD, ipv6(6, "::1", tcp_syn(pseudo6(6, 20, "::1"), tcp6))
    yield "udp6", 0x86DD, ipv6(17, "::1", udp(pseudo6(17, 9, "::1"), udp6))


# Raw IP sockets (IP_HDRINCL: the packet as written).
for family, name in [(socket.AF_INET, "raw4"), (socket.AF_INET6, "raw6")]:
    try:
        raw = socket.socket(family, socket.SOCK_RAW, socket.IPPROTO_RAW)
    except OSError as e:
        out[name] = e.errno
        continue
    out[name] = "OPENED"
    try:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"eth0")
    except OSError:
        pass
    for what, _, packet in forged():
        if (family == socket.AF_INET) == what.endswith("4"):
            dst = "127.0.0.1" if what.endswith("4") else "::1"
            try:
                raw.sendto(packet if family == socket.AF_INET else packet[40:], (dst, 0))
            except OSError:
                pass

# A packet socket on eth0: whole frames, routed by nothing but slirp4netns.
try:
    packet_socket = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
except OSError as e:
    out["packet"] = e.errno
else:
    out["packet"] = "OPENED"
    try:
        packet_socket.bind(("eth0", 0))
        for what, ethertype, packet in forged():
            frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + struct.pack("!H", ethertype) + packet
            packet_socket.send(frame)
    except OSError as e:
        out["packet_send"] = e.errno

# Ordinary sockets, to every address that could lead to the host.
for host, port in [("127.0.0.1", tcp4), ("10.0.2.2", tcp4), ("10.0.2.3", tcp4), ("::1", tcp6)]:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect((host, port))
        out["connect " + host] = "CONNECTED"
    except OSError as e:
        out["connect " + host] = e.errno or str(e)
    s.close()
for host, port in [("10.0.2.2", udp4), ("10.0.2.3", udp4), ("255.255.255.255", udp4)]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    try:
        s.sendto(b"x", (host, port))
        out["sendto " + host] = "sent"
    except OSError as e:
        out["sendto " + host] = e.errno
    s.close()

print(json.dumps(out, sort_keys=True))
