package grammar

// str consumes c inside a string value or an additional property name.
func (m *Matcher) str(f frame, c byte, out *[]int32) {
	key := f.kind == fKey
	if f.u8n > 0 {
		if !f.utf8Cont(c) {
			return
		}
		if key {
			f.h = hashByte(f.h, c)
		}
		push(out, m.add(f))
		return
	}
	switch f.st {
	case sChar:
		if c == '"' {
			if f.kind == fString && f.a < m.g.nodes[f.node].minLength {
				return
			}
			m.endString(f, out)
			return
		}
		if c < 0x20 {
			return
		}
		if f.kind == fString {
			if ml := m.g.nodes[f.node].maxLength; ml >= 0 && f.a >= ml {
				return
			}
		}
		f.a++
		if c == '\\' {
			f.st = sEsc
			break
		}
		if c >= 0x80 && !f.utf8Start(c) {
			return
		}
		if key {
			f.h = hashByte(f.h, c)
		}
	case sEsc:
		if c == 'u' {
			f.st, f.hexn, f.b = sHex, 0, 0
			break
		}
		d, ok := unescape(c)
		if !ok {
			return
		}
		f.st = sChar
		if key {
			f.h = hashByte(f.h, d)
		}
	case sHex:
		v, ok := hexVal(c)
		if !ok || (f.hexn == 1 && f.b == 0xD && v >= 0xC) { // a low surrogate cannot come first
			return
		}
		f.b = f.b<<4 | v
		f.hexn++
		switch {
		case f.hexn < 4:
		case f.b >= 0xD800 && f.b <= 0xDBFF:
			f.st, f.p = sLowBS, f.b
		default:
			f.st = sChar
			if key {
				f.h = hashRune(f.h, rune(f.b))
			}
		}
	case sLowBS:
		if c != '\\' {
			return
		}
		f.st = sLowU
	case sLowU:
		if c != 'u' {
			return
		}
		f.st, f.hexn, f.b = sLowHex, 0, 0
	case sLowHex:
		v, ok := hexVal(c)
		if !ok || (f.hexn == 0 && v != 0xD) || (f.hexn == 1 && v < 0xC) {
			return
		}
		f.b = f.b<<4 | v
		f.hexn++
		if f.hexn == 4 {
			f.st = sChar
			if key {
				f.h = hashRune(f.h, 0x10000+(f.p-0xD800)<<10+(f.b-0xDC00))
			}
		}
	}
	push(out, m.add(f))
}

// endString completes a string at its closing quote. An additional property
// name must differ from the declared ones and from the names already used.
func (m *Matcher) endString(f frame, out *[]int32) {
	if f.kind == fString {
		push(out, f.parent)
		return
	}
	obj := m.ar[f.parent]
	n := &m.g.nodes[obj.node]
	for i := range n.props {
		if n.props[i].hash == f.h {
			return
		}
	}
	for r := obj.keys; r >= 0; r = m.ar[r].parent {
		if m.ar[r].h == f.h {
			return
		}
	}
	obj.keys = m.add(frame{kind: fKeyRec, parent: obj.keys, node: obj.node, keys: -1, p: -1, h: f.h})
	push(out, m.add(obj))
}

// utf8Start begins a character of f with its lead byte c (at least 0x80);
// false when c cannot lead one.
func (f *frame) utf8Start(c byte) bool {
	need, lo, hi := utf8Lead(c)
	if need == 0 {
		return false
	}
	f.u8n, f.u8lo, f.u8hi = uint8(need), lo, hi
	return true
}

// utf8Cont consumes c, the next continuation byte of the character of f
// being written; false when c cannot continue it.
func (f *frame) utf8Cont(c byte) bool {
	if c < f.u8lo || c > f.u8hi {
		return false
	}
	f.u8n--
	f.u8lo, f.u8hi = 0x80, 0xBF
	return true
}
