package proxy

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// ParsePorts reads a list of ports, each a port or a range LOW-HIGH, as
// "19093-19095" or "19093,19094,19095". Every port is 1 to 65535 and
// named once.
func ParsePorts(spec string) ([]int, error) {
	var ports []int
	for _, part := range strings.Split(spec, ",") {
		lowText, highText, isRange := strings.Cut(strings.TrimSpace(part), "-")
		low, err := parsePort(lowText)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", part, err)
		}
		high := low
		if isRange {
			if high, err = parsePort(highText); err != nil {
				return nil, fmt.Errorf("%q: %w", part, err)
			}
			if high < low {
				return nil, fmt.Errorf("%q: a range goes from its lower port to its higher", part)
			}
		}
		for port := low; port <= high; port++ {
			ports = append(ports, port)
		}
	}
	return ports, checkPorts(ports)
}

func parsePort(text string) (int, error) {
	port, err := strconv.Atoi(text)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", text)
	}
	return port, nil
}

// checkPorts refuses a port out of range or named twice.
func checkPorts(ports []int) error {
	for i, port := range ports {
		if port < 1 || port > 65535 {
			return fmt.Errorf("port %d is out of range: give 1 to 65535", port)
		}
		if slices.Contains(ports[:i], port) {
			return fmt.Errorf("port %d is named twice", port)
		}
	}
	return nil
}

// bindBrokerPorts binds a listener on host at each of ports, so that a
// port taken is an error at once, not when the cluster first names a
// broker.
func (p *Proxy) bindBrokerPorts(host string, ports []int) ([]net.Listener, error) {
	var bound []net.Listener
	for _, port := range ports {
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		ln, err := p.cfg.Listener("tcp", addr)
		if err != nil {
			for _, b := range bound {
				b.Close()
			}
			return nil, fmt.Errorf("proxy: a broker's listener on %s: %w", addr, err)
		}
		bound = append(bound, ln)
	}
	return bound, nil
}
